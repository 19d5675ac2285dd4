"""A reserve that claims a device for the common request (one class, no
``member_of``, no member key) takes the conditional path with its claim's
steps (``cyquota.placement.claim_steps``): on SQLite one statement a step,
inside the transaction that holds the database; the same device as the
full search; what the steps cannot decide exactly left, nothing written,
to the locked path. On PostgreSQL and MariaDB, where the steps are part
of the one statement: tests/functional/test_claim_in_statement.py."""

import contextlib

import pytest
import sqlalchemy as sa

from cyquota import context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import placement_models as pm
from cyquota import exception
from cyquota.placement import candidates
from cyquota.placement import capacity
from cyquota.placement import device_errors
from cyquota.placement import pools
from cyquota.placement import request as request_mod
from cyquota import quota
from tests import fixtures
from tests.unit.placement import test_claim_candidates as claims

PROJECT = 'p'
ONE = {'resources': 'FPGA:1'}


def reserve(ctx, consumer_id, params=ONE, amount=1):
    return quota.QUOTAS.reserve(ctx, PROJECT, {'FPGA': amount},
                                consumer_id=consumer_id, devices=params)


def first(ctx, params=ONE):
    """The full search's first candidate for ``params``: ``{provider id:
    {rc: amount}}``."""
    device_request = request_mod.from_params(params)
    with db_api.reader_connection(ctx) as conn:
        rule = pools.rule_for(conn, device_request.member_keys,
                              pools.Carrier.of(ctx, PROJECT))
        found = next(candidates.iter_allocation_requests(
            conn, device_request, rule), None)
    return None if found is None else found.allocations


def held(consumer_id):
    with db_api.get_engine().connect() as conn:
        rows = conn.execute(
            sa.select(pm.DeviceAllocation.resource_provider_id,
                      pm.DeviceAllocation.resource_class,
                      pm.DeviceAllocation.used)
            .where(pm.DeviceAllocation.consumer_id == consumer_id)).all()
    return {provider_id: {rc: used} for provider_id, rc, used in rows}


def reserved():
    with db_api.get_engine().connect() as conn:
        return conn.execute(
            sa.select(models.QuotaUsage.reserved)
            .where(models.QuotaUsage.project_id == PROJECT,
                   models.QuotaUsage.resource == 'FPGA')).scalar()


def generations():
    with db_api.get_engine().connect() as conn:
        return dict(conn.execute(sa.select(
            pm.ResourceProvider.id, pm.ResourceProvider.generation)).all())


def claim_sending(ctx, consumer_id, params=ONE):
    """Claim one FPGA for ``consumer_id``; return what each engine sent:
    ``(one statements run, statements of transactions)`` (SQLite has no
    one statements)."""
    engines = [db_api.get_engine()]
    if db_api.get_engine().dialect.name != 'sqlite':
        engines.insert(0, db_api.get_autocommit_engine())
    with contextlib.ExitStack() as stack:
        sent = [stack.enter_context(fixtures.statements_sent(engine))
                for engine in engines]
        reserve(ctx, consumer_id, params)
    # A connection prepares a one statement the first time it runs it.
    return ([sql for sql in sent[0] if not sql.startswith('PREPARE')]
            if len(sent) == 2 else []), sent[-1]


def used_by_device():
    """``{provider id: used}`` of every inventory row."""
    with db_api.reader_connection(context.get_admin_context()) as conn:
        return {provider_id: record.used for (provider_id, _rc), record
                in capacity.load(conn).items()}


def made_ready(ctx):
    """A limit of FPGA, and the project's usage row made."""
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 1000)
    quota.QUOTAS.rollback(ctx, PROJECT, quota.QUOTAS.reserve(
        ctx, PROJECT, {'FPGA': 1}))


def cloud_of_nodes(ctx):
    """30 nodes of 3 one-FPGA devices (the first of each taken, every
    third node in the lease pool); the project ready."""
    claims.build(claims.devices(120, per_node=3), pool=True)
    made_ready(ctx)


UNDECIDED = pytest.mark.parametrize('spec', [
    # A pending lease on the first device with room: its peak is read.
    {'pending': {'FPGA': 1}},
    # A step size the amount is not a multiple of.
    {'step_size': 2},
    # A sharing provider of the class somewhere in the cloud.
    {'sharing': True},
], ids=['pending lease', 'step size', 'sharing provider'])


def cloud_undecided(ctx, spec):
    """A node of three two-FPGA devices, the first of which (or the
    cloud) is as ``spec`` says; the project ready."""
    devices = [{}]
    for index in range(3):
        inventory = {'total': 2}
        if index == 0 and 'step_size' in spec:
            inventory.update(step_size=spec['step_size'], max_unit=2)
        devices.append({'parent': 0, 'inventory': {'FPGA': inventory},
                        'pending': spec.get('pending', {})
                        if index == 0 else {}})
    if spec.get('sharing'):
        devices.append({'inventory': {'FPGA': {'total': 1}},
                        'aggs': [1], 'sharing': True})
    claims.build(devices)
    made_ready(ctx)


def check_left_to_the_locked_path(ctx, one_statement):
    """Claim, and check that the locked path took the search's first
    (after the refusal of the ``one_statement``, where there is one) and
    moved its generation alone."""
    expected = first(ctx)
    before = generations()
    alone, locked = claim_sending(ctx, 'vm')
    assert len(alone) == int(one_statement) and locked
    assert held('vm') == expected
    assert reserved() == 1
    [chosen] = expected
    assert generations() == {**before, chosen: before[chosen] + 1}


def check_refusals_write_nothing(ctx):
    """A consumer claiming twice, a project over its limit and a request
    no device serves are refused, and change nothing."""
    reserve(ctx, 'vm-1')
    before, holding = generations(), held('vm-1')
    with pytest.raises(device_errors.ConsumerExists):
        reserve(ctx, 'vm-1')
    quota.QUOTAS.limits.set_project_limit(ctx, PROJECT, 'FPGA', 1)
    with pytest.raises(exception.OverQuota):
        reserve(ctx, 'vm-2')
    quota.QUOTAS.limits.set_project_limit(ctx, PROJECT, 'FPGA', 1000)
    with pytest.raises(device_errors.NoValidAllocation):
        reserve(ctx, 'vm-3', {'resources': 'FPGA:2'}, amount=2)
    assert (generations(), held('vm-1'), reserved()) == (before, holding, 1)
    assert held('vm-2') == held('vm-3') == {}


#: The steps on SQLite, after the usage row's conditional UPDATE.
STEPS = ['UPDATE quota_usages', 'SELECT', 'UPDATE resource_providers',
         'INSERT INTO device_consumers', 'INSERT INTO device_allocations',
         'INSERT INTO reservations']


def _shape(sql):
    words = sql.split()
    return ' '.join(words[:{'UPDATE': 2, 'INSERT': 3}.get(words[0], 1)])


def test_a_common_claim_is_its_steps_and_the_searchs_first(sqlite_db, ctx):
    cloud_of_nodes(ctx)
    for number in range(8):
        expected = first(ctx)
        _, sent = claim_sending(ctx, 'vm-%d' % number)
        assert [_shape(sql) for sql in sent
                if sql.split()[0] not in ('BEGIN', 'COMMIT')] == STEPS
        assert held('vm-%d' % number) == expected
    # Eight devices: past the third node, in the lease pool, which the
    # search skips.
    assert reserved() == 8


@UNDECIDED
def test_what_the_steps_cannot_decide_the_locked_path_does(
        sqlite_db, ctx, spec):
    cloud_undecided(ctx, spec)
    check_left_to_the_locked_path(ctx, one_statement=False)


def test_a_claim_refused_writes_nothing(sqlite_db, ctx):
    cloud_of_nodes(ctx)
    check_refusals_write_nothing(ctx)
