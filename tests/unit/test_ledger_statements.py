"""The statements of the ledger's hot paths under the flat model.

Speed is measured in ``benchmarks/``; these tests pin down what makes it:
the common reserve and commit change each count with one conditional
UPDATE and lock no usage row first, a commit locks its reservations
before any count (the lock order of cyquota.quota.ledger), and every refusal falls
back to the locked path, which reads the rows to say why.
"""

import contextlib
import re

import pytest
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota import exception
from cyquota.quota import QUOTAS
from cyquota.quota.limits import local
from tests.unit.test_engine import clock, counts  # noqa: F401 (fixture)

_CONTROL = re.compile(r'(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b')


@pytest.fixture
def db(sqlite_db, clock):  # noqa: F811 (the fixture imported above)
    return clock


def _shape(statement):
    """``VERB table`` of a statement, ``+ FOR UPDATE`` when it locks."""
    words = statement.split()
    verb = words[0]
    table = {'SELECT': lambda: words[words.index('FROM') + 1],
             'UPDATE': lambda: words[1],
             'INSERT': lambda: words[2]}[verb]()
    locks = ' FOR UPDATE' if 'FOR UPDATE' in statement else ''
    return '%s %s%s' % (verb, table, locks)


@contextlib.contextmanager
def statements():
    """The shapes of the statements run meanwhile, in order."""
    seen = []

    def record(conn, cursor, statement, *args):
        if not _CONTROL.match(statement):
            seen.append(_shape(statement))

    engine = db_api.get_engine()
    sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, 'before_cursor_execute', record)


def _locking_select(table):
    # SQLite has no FOR UPDATE (a writer holds the whole database).
    if db_api.get_engine().dialect.name == 'sqlite':
        return 'SELECT ' + table
    return 'SELECT %s FOR UPDATE' % table


def _ending():
    """What ending a reservation runs before it touches the counts."""
    if db_api.get_engine().dialect.update_returning:
        return ['UPDATE reservations']
    return [_locking_select('reservations'), 'UPDATE reservations']


def test_reserve_and_commit_change_counts_without_reading_them(db, ctx):
    local.LocalLimitSource().set_registered_limit(ctx, 'FPGA', 10)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    with statements() as reserve:
        uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, request_id='r-1')
    assert reserve == ['UPDATE quota_usages', 'SELECT reservations',
                       'INSERT reservations']
    with statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    assert commit == _ending() + [
        'UPDATE quota_usages', 'UPDATE consumer_usages']
    assert counts(ctx) == (3, 0)


def test_rollback_and_expiry_touch_no_consumer(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    with statements() as rollback:
        QUOTAS.rollback(ctx, 'p1', uuids)
    assert rollback == _ending() + [
        'UPDATE quota_usages']
    QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, expire=5)
    db.advance(6)
    with statements() as expire:
        assert QUOTAS.expire(ctx) == 1
    # (Before and after: which projects have expired reservations; then
    # which of the project's, read, and locked by id.)
    assert expire[2:-1] == [_locking_select('reservations'),
                            'UPDATE reservations', 'UPDATE quota_usages']
    assert counts(ctx) == (1, 0)


@pytest.mark.parametrize('case', ['first use', 'over quota', 'overflow',
                                  'request id seen'])
def test_a_refused_update_falls_back_to_the_locked_path(db, ctx, case):
    source = local.LocalLimitSource()
    source.set_registered_limit(ctx, 'FPGA', 3)
    if case != 'first use':
        QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1},
                                                request_id='r-1'))
    if case == 'overflow':
        source.set_registered_limit(ctx, 'FPGA', -1)
    delta = {'first use': 1, 'over quota': 3, 'overflow': 2 ** 31 - 1,
             'request id seen': 1}[case]
    with statements() as seen:
        try:
            QUOTAS.reserve(ctx, 'p1', {'FPGA': delta}, request_id=(
                'r-1' if case == 'request id seen' else 'r-2'))
        except (exception.OverQuota, exception.InvalidDelta):
            pass
    assert seen[0] == 'UPDATE quota_usages'
    assert any(s.startswith('SELECT quota_usages') for s in seen), seen
    expected = {'first use': (0, 1), 'over quota': (1, 0),
                'overflow': (1, 0), 'request id seen': (1, 0)}[case]
    assert counts(ctx) == expected


def test_unlimited_and_zero_limits_in_the_statement(db, ctx):
    source = local.LocalLimitSource()
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    source.set_registered_limit(ctx, 'FPGA', 0)
    source.set_project_limit(ctx, 'p1', 'FPGA', -1)
    with statements() as seen:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1000})
    assert seen == ['UPDATE quota_usages', 'INSERT reservations']
    source.set_project_limit(ctx, 'p1', 'FPGA', 0)
    with pytest.raises(exception.OverQuota) as raised:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert raised.value.overs[0]['limit'] == 0
    assert counts(ctx) == (1, 1000)
