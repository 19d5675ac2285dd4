"""The statements of the ledger's hot paths under the flat model.

Speed is measured in ``benchmarks/``; these tests pin down what makes it:
the common reserve and commit of one resource change each count with one
conditional UPDATE and lock no usage row first (on PostgreSQL and
MariaDB, the whole operation is one statement, its own transaction), a
commit locks its reservations before any count (the lock order of
cyquota.quota.ledger), and every refusal falls back to the locked path,
which reads the rows to say why. Those of several resources:
test_ledger_multi_resource.py.
"""

import contextlib
import itertools
import re

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cyquota.db import api as db_api
from cyquota.db import prepared
from cyquota import exception
from cyquota.quota.ledger import one_statement
from cyquota.quota.limits import local
from cyquota.quota import QUOTAS
from tests.unit.test_engine import clock, counts, rows  # noqa: F401,H301

_CONTROL = re.compile(
    r'(BEGIN(?! NOT ATOMIC)|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|PREPARE)\b')


@pytest.fixture
def db(sqlite_db, clock):  # noqa: F811 (the fixture imported above)
    return clock


# What the parts of a statement of data-modifying CTEs, or of a compound
# statement (a statement a line), change.
_CHANGE = re.compile(r'(?:\(|^)(UPDATE|INSERT INTO) (\w+)', re.M)


def _shape(statement):
    """``VERB table`` of a statement, ``+ FOR UPDATE`` when it locks; of
    a statement of data-modifying CTEs (``WITH``) or a compound statement
    (``BEGIN``), that word and the kinds of change its parts make, each
    once, in order; of MariaDB's EXECUTE of a prepared one, the shape of what
    the server runs."""
    words = statement.split()
    if words[0] == 'EXECUTE':
        statement = prepared.text(words[1].split('(')[0])
        words = statement.split()
    verb = words[0]
    if verb in ('WITH', 'BEGIN'):
        return verb + ' ' + ', '.join(dict.fromkeys(
            '%s %s' % (change.split()[0], table)
            for change, table in _CHANGE.findall(statement)))
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

    engines = [db_api.get_engine()]
    if one_statement.available_on(engines[0].dialect):
        engines.append(db_api.get_autocommit_engine())
    for engine in engines:
        sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield seen
    finally:
        for engine in engines:
            sa.event.remove(engine, 'before_cursor_execute', record)


def _locking_select(table):
    # SQLite has no FOR UPDATE (a writer holds the whole database).
    if db_api.get_engine().dialect.name == 'sqlite':
        return 'SELECT ' + table
    return 'SELECT %s FOR UPDATE' % table


def _one_statement():
    """The word the one-statement operations start with: ``WITH`` (CTEs,
    PostgreSQL), ``BEGIN`` (a compound statement, MariaDB), or None."""
    dialect = db_api.get_engine().dialect
    if dialect.name == 'mysql' and dialect.is_mariadb:
        return 'BEGIN'
    return 'WITH' if dialect.name == 'postgresql' else None


def _ending():
    """What ending a reservation runs before it touches the counts."""
    if db_api.get_engine().dialect.update_returning:
        return ['UPDATE reservations']
    return [_locking_select('reservations'), 'UPDATE reservations']


def _reserving(request_id=False):
    """What a reserve of any number of resources that fits runs: no read
    before its first write. On PostgreSQL and MariaDB one statement;
    elsewhere the UPDATE of every resource in one batch, then the INSERT
    of every reservation."""
    word = _one_statement()
    if word is not None:
        return [word + ' UPDATE quota_usages, INSERT reservations']
    return ['UPDATE quota_usages'] + (
        ['SELECT reservations'] if request_id else []) + [
        'INSERT reservations']


_COMMIT_CHANGES = ('UPDATE reservations, UPDATE quota_usages, '
                   'INSERT consumer_usages, UPDATE consumer_usages')


def _committing(taken=False):
    """What a commit of reservations of any resources runs: one statement
    on PostgreSQL and MariaDB; elsewhere the end of the reservations, the
    counts of every resource in one batch, and what consumers hold (one
    upsert, or, where a delta is negative (``taken``), an UPDATE)."""
    word = _one_statement()
    if word is not None:
        return [word + ' ' + _COMMIT_CHANGES]
    return _ending() + ['UPDATE quota_usages'] + [
        'UPDATE consumer_usages' if taken else 'INSERT consumer_usages']


def _rolling_back():
    if _one_statement() == 'WITH':
        return ['WITH UPDATE reservations, UPDATE quota_usages']
    if _one_statement() == 'BEGIN':
        return ['BEGIN UPDATE reservations, UPDATE quota_usages']
    return _ending() + ['UPDATE quota_usages']


def test_reserve_and_commit_change_counts_without_reading_them(db, ctx):
    local.LocalLimitSource().set_registered_limit(ctx, 'FPGA', 10)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    with statements() as reserve:
        uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, request_id='r-1')
    assert reserve == _reserving(request_id=True)
    with statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    assert commit == _committing()
    assert counts(ctx) == (3, 0)


def test_rollback_and_expiry_touch_no_consumer(db, ctx):
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    with statements() as rollback:
        QUOTAS.rollback(ctx, 'p1', uuids)
    assert rollback == _rolling_back()
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
    assert seen[0] == _reserving()[0]
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
    assert seen == _reserving()
    source.set_project_limit(ctx, 'p1', 'FPGA', 0)
    with pytest.raises(exception.OverQuota) as raised:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    assert raised.value.overs[0]['limit'] == 0
    assert counts(ctx) == (1, 1000)


def test_a_detach_takes_the_same_path(db, ctx):
    # Cinder's detach: reserve -1, then commit it.
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 2},
                                            consumer_id='vm'))
    with statements() as reserve:
        uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}, consumer_id='vm')
    assert reserve == _reserving()
    assert counts(ctx) == (2, 0)
    with statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    assert commit == _committing(taken=True)
    assert counts(ctx) == (1, 0)
    assert [(r['consumer_id'], r['used'])
            for r in rows('consumer_usages')] == [('vm', 1)]


def test_every_resource_of_a_reserve_in_the_same_statement(db, ctx):
    source = local.LocalLimitSource()
    source.set_registered_limit(ctx, 'GPU', 2)
    for resource in ('FPGA', 'GPU'):
        QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {resource: 1}))
    with statements() as reserve:
        uuids = QUOTAS.reserve(ctx, 'p1', {'GPU': 1, 'FPGA': 3})
    assert reserve == _reserving()
    with statements() as commit:
        QUOTAS.commit(ctx, 'p1', uuids)
    assert commit == _committing()
    assert [counts(ctx, resource=r) for r in ('FPGA', 'GPU')] == [
        (4, 0), (2, 0)]
    # GPU is full: the first resource's write is undone, and the locked
    # path says why.
    with pytest.raises(exception.OverQuota) as raised:
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1, 'GPU': 1})
    assert [o['resource'] for o in raised.value.overs] == ['GPU']
    assert [counts(ctx, resource=r) for r in ('FPGA', 'GPU')] == [
        (4, 0), (2, 0)]


@pytest.mark.parametrize('target', ['committed', 'rolled_back'])
def test_the_end_of_one_reservation_groups_nothing(target):
    # A commit that waited for the usage row sets every part of its
    # statement up again while it holds the row (PostgreSQL's
    # EvalPlanQual): the end of one reservation, the common case, has no
    # aggregate to set up. A batch groups its rows by resource.
    dialect = postgresql.psycopg.dialect()

    def text(count):
        return one_statement.end(target, count, dialect).prepared.text
    assert 'GROUP BY' not in text(1)
    assert 'GROUP BY' in text(2)


def test_a_usage_document_is_one_query(db, ctx):
    """``GET /v1/quota_usages/{id}`` reads the counts, the limits and the
    parent together, not one query per concern."""
    source = local.LocalLimitSource()
    source.set_project(ctx, 'root')
    source.set_project(ctx, 'p1', parent_id='root')
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    with statements() as read:
        document = QUOTAS.get_usage_document(ctx, 'p1')
    assert len(read) == 1
    assert document['parent_id'] == 'root'
    assert document['resources']['FPGA']['used'] == 1


def test_a_usage_document_is_a_transaction_of_its_own(db, ctx):
    """On a server the one query runs on an autocommit connection, with no
    BEGIN before it and no ROLLBACK after it; SQLite's runs in a read
    transaction. Inside a caller's transaction it joins that one, and sees
    what it wrote."""
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}))
    engine = db_api.get_engine()
    on_server = engine.dialect.name != 'sqlite'
    ran_on = []

    def record(name):
        def listener(conn, cursor, statement, *args):
            if not _CONTROL.match(statement):
                ran_on.append(name)
        return listener

    engines = {'transaction': engine}
    if on_server:
        engines['autocommit'] = db_api.get_autocommit_engine()
    listeners = [(e, record(name)) for name, e in engines.items()]
    for listened, listener in listeners:
        sa.event.listen(listened, 'before_cursor_execute', listener)
    try:
        document = QUOTAS.get_usage_document(ctx, 'p1')
        alone = list(ran_on)
        del ran_on[:]
        with db_api.writer(ctx):
            QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
            joined = QUOTAS.get_usage_document(ctx, 'p1')
            inside = [name for name in ran_on if name == 'autocommit']
    finally:
        for listened, listener in listeners:
            sa.event.remove(listened, 'before_cursor_execute', listener)
    assert alone == ['autocommit' if on_server else 'transaction']
    assert document['resources']['FPGA']['used'] == 1
    assert inside == []
    assert joined['resources']['FPGA']['reserved'] == 2


_LIMIT = st.one_of(st.none(), st.integers(-1, 6))
_PROJECTS = itertools.count()


@hypothesis.settings(max_examples=25, deadline=None,
                     suppress_health_check=[
                         hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(own=st.tuples(_LIMIT, _LIMIT),
                  used=st.tuples(st.integers(0, 3), st.integers(0, 3)),
                  reserved=st.tuples(st.integers(0, 3), st.integers(0, 3)),
                  parent=st.booleans())
def test_the_one_query_document_says_what_the_reads_say(
        db, ctx, own, used, reserved, parent):
    """Whatever the limits (own, registered, none), counts (none yet,
    used, reserved) and parent, the one query agrees with the reads it
    replaces: ``get_project_usage`` and ``get_parent``."""
    source = local.LocalLimitSource()
    source.set_registered_limit(ctx, 'GPU', 3)
    project_id = 'doc%d' % next(_PROJECTS)
    if parent:
        source.set_project(ctx, 'root')
    source.set_project(ctx, project_id, parent_id='root' if parent else None)
    resources = ('FPGA', 'GPU')
    for resource, limit, commit, hold in zip(resources, own, used, reserved):
        source.set_project_limit(ctx, project_id, resource, -1)
        for _ in range(commit):
            QUOTAS.commit(ctx, project_id,
                          QUOTAS.reserve(ctx, project_id, {resource: 1}))
        for _ in range(hold):
            QUOTAS.reserve(ctx, project_id, {resource: 1})
        if limit is None:
            source.delete_project_limit(ctx, project_id, resource)
        else:
            source.set_project_limit(ctx, project_id, resource, limit)
    document = QUOTAS.get_usage_document(ctx, project_id)
    assert document == {
        'project_id': project_id,
        'parent_id': QUOTAS.limits.get_parent(ctx, project_id),
        'resources': QUOTAS.get_project_usage(ctx, project_id)}
    assert document['parent_id'] == ('root' if parent else None)
