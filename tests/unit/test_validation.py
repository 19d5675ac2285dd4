"""Bad input to the quota ledger.

Every case must raise its specific exception with a message that names the
bad value, and leave every table as it was. Input the engine can judge on
its own is refused before a single SQL statement runs.
"""

import datetime
import functools

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota import QUOTAS

MAX = models.MAX_COUNT
UTC = datetime.timezone.utc
UUID = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'
TEN_YEARS = 3650 * 86400


@functools.lru_cache
def _schema(url):
    tables = sa.MetaData()
    tables.reflect(db_api.get_engine())
    return tables


def _tables():
    """Every row of every table the database holds."""
    engine = db_api.get_engine()
    with engine.connect() as conn:
        return {t.name: conn.execute(sa.select(t).order_by(*t.c)).all()
                for t in _schema(str(engine.url)).sorted_tables}


def refused(cls, named, call, *args, **kwargs):
    """Run ``call``, expecting exactly ``cls`` with ``named`` (a string or
    a tuple of strings) in its message and no table changed; returns how
    many SQL statements ran."""
    before = _tables()
    statements = []

    def count(*_):
        statements.append(1)

    engine = db_api.get_engine()
    sa.event.listen(engine, 'before_cursor_execute', count)
    try:
        with pytest.raises(exception.CyquotaException) as caught:
            call(*args, **kwargs)
    finally:
        sa.event.remove(engine, 'before_cursor_execute', count)
    assert type(caught.value) is cls, caught.value
    for text in (named,) if isinstance(named, str) else named:
        assert text in str(caught.value)
    assert _tables() == before
    return len(statements)


@pytest.fixture
def ledger(sqlite_db, ctx):
    """Books to leave alone: a limit, a committed and a pending reservation.
    Returns the pending reservation's uuids (FPGA, GPU)."""
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 4)
    QUOTAS.limits.set_registered_limit(ctx, 'GPU', 8)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', {'FPGA': 1},
                                            consumer_id='vm-1'))
    return QUOTAS.reserve(ctx, 'p1', {'FPGA': 1, 'GPU': 1},
                          request_id='req-1')


BAD_DELTAS = [
    ({'FPGA': 0}, exception.InvalidDelta, 'zero'),
    ({'FPGA': True}, exception.InvalidDelta, 'True'),
    ({'FPGA': False}, exception.InvalidDelta, 'False'),
    ({'FPGA': 1.0}, exception.InvalidDelta, '1.0'),
    ({'FPGA': '1'}, exception.InvalidDelta, "'1'"),
    ({'FPGA': None}, exception.InvalidDelta, 'None'),
    ({'FPGA': MAX + 1}, exception.InvalidDelta, str(MAX + 1)),
    ({'FPGA': -MAX - 1}, exception.InvalidDelta, str(-MAX - 1)),
    ({'GPU': 1, 'FPGA': 2 ** 64}, exception.InvalidDelta, str(2 ** 64)),
    ({'NPU': 1}, exception.UnknownResource, 'NPU'),
    ({'fpga': 1}, exception.UnknownResource, 'fpga'),
    ({'CUSTOM_X': 1}, exception.UnknownResource, 'CUSTOM_X'),
    ({7: 1}, exception.UnknownResource, '7'),
    ({'FPGA': 1, 'VGPU': 1}, exception.UnknownResource, 'VGPU'),
    ({}, exception.Invalid, '{}'),
    ([('FPGA', 1)], exception.Invalid, "[('FPGA', 1)]"),
    (None, exception.Invalid, 'None'),
    ('FPGA', exception.Invalid, 'FPGA'),
]


@pytest.mark.parametrize('deltas,cls,named', BAD_DELTAS)
def test_reserve_bad_deltas(ledger, ctx, deltas, cls, named):
    assert refused(cls, named, QUOTAS.reserve, ctx, 'p1', deltas) == 0
    assert refused(cls, named, QUOTAS.reserve, ctx, 'p1', deltas,
                   dry_run=True) == 0


@pytest.mark.parametrize('deltas,cls,named', BAD_DELTAS + [
    ({'FPGA': -1}, exception.InvalidDelta, '-1'),
    ({'GPU': 2, 'FPGA': -3}, exception.InvalidDelta, '-3'),
])
def test_release_bad_deltas(ledger, ctx, deltas, cls, named):
    assert refused(cls, named, QUOTAS.release, ctx, 'p1', deltas) == 0


def test_unknown_resource_message_lists_known_ones(ledger, ctx):
    refused(exception.UnknownResource, 'FPGA, GPU', QUOTAS.reserve, ctx,
            'p1', {'NPU': 1})


def test_configured_resources_are_known(ledger, ctx):
    CONF.set_override('resources', ['VGPU', 'CUSTOM_X'], 'quota')
    assert QUOTAS.reserve(ctx, 'p1', {'VGPU': 1, 'CUSTOM_X': 2})
    refused(exception.UnknownResource, 'CUSTOM_Y', QUOTAS.reserve, ctx,
            'p1', {'CUSTOM_Y': 1})


# Checks that need the books: refused inside the transaction, which then
# rolls back.

def test_count_overflow(ledger, ctx):
    # FPGA is unlimited for p2: the [quota] default_limit.
    QUOTAS.reserve(ctx, 'p2', {'FPGA': 1})
    refused(exception.InvalidDelta, str(MAX), QUOTAS.reserve, ctx, 'p2',
            {'FPGA': MAX})
    refused(exception.InvalidDelta, str(MAX), QUOTAS.reserve, ctx, 'p2',
            {'FPGA': MAX, 'GPU': 1})
    assert QUOTAS.reserve(ctx, 'p2', {'FPGA': MAX - 1})


def test_negative_delta_below_zero(ledger, ctx):
    # p1 uses 1 FPGA and 0 GPU.
    refused(exception.InvalidDelta, '-2', QUOTAS.reserve, ctx, 'p1',
            {'FPGA': -2})
    refused(exception.InvalidDelta, '-1', QUOTAS.reserve, ctx, 'p1',
            {'FPGA': 1, 'GPU': -1})
    refused(exception.InvalidDelta, '-1', QUOTAS.reserve, ctx, 'p1',
            {'GPU': -1}, dry_run=True)


NOW = datetime.datetime.now(UTC)
PAST = NOW - datetime.timedelta(seconds=1)
TOO_FAR = NOW + datetime.timedelta(days=3651)


def _naive(value):
    return value.replace(tzinfo=None).isoformat()


@pytest.mark.parametrize('expire,named', [
    (datetime.datetime(2020, 1, 1, tzinfo=UTC), '2020-01-01T00:00:00'),
    pytest.param(PAST, _naive(PAST), id='a second ago'),
    ('2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z'),
    ('2020-01-01T02:00:00+02:00', '2020-01-01T02:00:00+02:00'),
    (datetime.datetime(2031, 1, 1), '2031-01-01T00:00:00'),
    ('2031-01-01T00:00:00', '2031-01-01T00:00:00'),
    ('tomorrow', 'tomorrow'),
    ('', "''"),
    ('2031-13-01T00:00:00Z', '2031-13-01T00:00:00Z'),
    (0, '0'),
    (0.0, '0.0'),
    (-5, '-5'),
    (float('nan'), 'nan'),
    (float('inf'), 'inf'),
    (TEN_YEARS + 1, str(TEN_YEARS + 1)),
    pytest.param(TOO_FAR, _naive(TOO_FAR), id='ten years and a day on'),
    (True, 'True'),
    ([60], '[60]'),
    (datetime.date(2031, 1, 1), '2031-01-01'),
    (datetime.timedelta(seconds=60), '0:01:00'),
])
def test_reserve_bad_expire(ledger, ctx, expire, named):
    assert refused(exception.InvalidExpire, named, QUOTAS.reserve, ctx,
                   'p1', {'FPGA': 1}, expire=expire) == 0


BAD_PROJECT_IDS = [
    ('', "''"),
    ('p' * 65, 'p' * 65),
    ('my project', 'my project'),
    ('p/1', 'p/1'),
    ('p\u00e9', 'p\u00e9'),
    (None, 'None'),
    (123, '123'),
    (b'p1', "b'p1'"),
]


@pytest.mark.parametrize('project_id,named', BAD_PROJECT_IDS)
def test_bad_project_id(ledger, ctx, project_id, named):
    cls = exception.InvalidProjectId
    pending = ledger
    source = QUOTAS.limits
    for call, args in [
            (QUOTAS.reserve, ({'FPGA': 1},)),
            (QUOTAS.commit, (pending,)),
            (QUOTAS.rollback, (pending,)),
            (QUOTAS.release, ({'FPGA': 1},)),
            (QUOTAS.get_project_usage, ()),
            (source.set_project_limit, ('FPGA', 1)),
            (source.delete_project_limit, ('FPGA',))]:
        assert refused(cls, named, call, ctx, project_id, *args) == 0


def test_longest_project_id_is_accepted(ledger, ctx):
    project_id = 'a' * 64
    assert QUOTAS.reserve(ctx, project_id, {'FPGA': 1})
    assert QUOTAS.get_project_usage(ctx, project_id)['FPGA']['reserved'] == 1


BAD_IDS = [('', "''"), (' ', "' '"), ('a b', "'a b'"), ('x' * 256, 'x' * 256),
           ('caf\u00e9', 'caf\u00e9'), (123, '123'), (['r'], "['r']")]


@pytest.mark.parametrize('value,named', BAD_IDS)
def test_bad_request_and_consumer_ids(ledger, ctx, value, named):
    for call, args, kwargs in [
            (QUOTAS.reserve, ({'FPGA': 1},), {'request_id': value}),
            (QUOTAS.reserve, ({'FPGA': 1},), {'consumer_id': value}),
            (QUOTAS.release, ({'FPGA': 1},), {'consumer_id': value})]:
        assert refused(exception.Invalid, (named, list(kwargs)[0]), call,
                       ctx, 'p1', *args, **kwargs) == 0


def test_longest_ids_are_accepted(ledger, ctx):
    value = '~' * 255
    uuids = QUOTAS.reserve(ctx, 'p1', {'GPU': 1}, request_id=value,
                           consumer_id=value)
    assert QUOTAS.reserve(ctx, 'p1', {'GPU': 1}, request_id=value) == uuids


@pytest.mark.parametrize('reservations,named', [
    ([], '[]'),
    ((), '()'),
    (None, 'None'),
    (UUID, UUID),
    ({UUID: 1}, UUID),
    (['not-a-uuid'], 'not-a-uuid'),
    ([UUID.upper()], UUID.upper()),
    ([UUID, 'not-a-uuid'], 'not-a-uuid'),
    ([UUID, 42], '42'),
    ([UUID + ' '], UUID + ' '),
])
def test_bad_reservation_list(ledger, ctx, reservations, named):
    for call in (QUOTAS.commit, QUOTAS.rollback):
        assert refused(exception.InvalidReservationList, named, call, ctx,
                       'p1', reservations) == 0


@pytest.mark.parametrize('value,named', [
    (-2, '-2'), (MAX + 1, str(MAX + 1)), (True, 'True'), ('3', "'3'"),
    (1.5, '1.5'), (None, 'None')])
def test_bad_limit(ledger, ctx, value, named):
    source = QUOTAS.limits
    cls = exception.InvalidLimit
    assert refused(cls, named, source.set_registered_limit, ctx, 'FPGA',
                   value) == 0
    assert refused(cls, named, source.set_project_limit, ctx, 'p1', 'FPGA',
                   value) == 0


def test_limit_of_unknown_resource(ledger, ctx):
    source = QUOTAS.limits
    cls = exception.UnknownResource
    assert refused(cls, 'NPU', source.set_registered_limit, ctx, 'NPU',
                   1) == 0
    assert refused(cls, 'NPU', source.set_project_limit, ctx, 'p1', 'NPU',
                   1) == 0
    assert refused(cls, 'NPU', source.delete_project_limit, ctx, 'p1',
                   'NPU') == 0


def test_delete_missing_project_limit(ledger, ctx):
    refused(exception.NotFound, 'p2', QUOTAS.limits.delete_project_limit,
            ctx, 'p2', 'FPGA')
