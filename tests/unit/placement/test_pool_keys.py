"""A pool key is a capability (SPEC 3.4): the pool's filter_tenant_id
metadata names the projects whose members may carry its key, a pool naming
none is the operator's (admin and service roles only), and a key the
caller may not carry answers exactly as a key no aggregate holds, holding
nothing. The same rule for allocation candidates, device claims and lease
devices."""

import datetime

import pytest

from cyquota.conf import CONF
from cyquota import context
from cyquota import leases
from cyquota.placement import aggregates
from cyquota.placement import allocations
from cyquota.placement import candidates
from cyquota.placement import device_errors
from cyquota.placement import request
from cyquota.quota import QUOTAS

ONE = {'FPGA': {'total': 1}}
UNKNOWN = 'reservation:nobody'


def member(project):
    return context.RequestContext(project_id=project, user_id='u-' + project,
                                  roles=['member', 'reader'])


def admin(project='ops'):
    return context.RequestContext(project_id=project, user_id='admin',
                                  roles=['admin'], is_admin=True)


def service(project='services'):
    return context.RequestContext(project_id=project, user_id='nova',
                                  roles=['service'])


@pytest.fixture
def pools(tree):
    """Project A's pool, a pool of A and C (a comma list), a pool of A and
    D (a suffixed key), the operator's pool, and an ordinary device."""
    tree.provider('plain', inventory=ONE)
    tree.provider('a_dev', aggs=['a'], inventory=ONE)
    tree.provider('ac_dev', aggs=['ac'], inventory=ONE)
    tree.provider('ad_dev', aggs=['ad'], inventory=ONE)
    tree.provider('ops_dev', aggs=['ops'], inventory=ONE)
    aggregates.put(tree.ctx, tree.agg['a'], 'pool of A', {
        'reservation:pool-1': 'a', 'filter_tenant_id': 'A'})
    aggregates.put(tree.ctx, tree.agg['ac'], 'pool of A and C', {
        'reservation:pool-ac': 'ac', 'filter_tenant_id': 'A, C'})
    aggregates.put(tree.ctx, tree.agg['ad'], 'pool of A and D', {
        'reservation:pool-ad': 'ad', 'filter_tenant_id': 'A',
        'filter_tenant_id_2': 'D', 'filter_tenant_idx': 'E'})
    aggregates.put(tree.ctx, tree.agg['ops'], 'operator pool', {
        'reservation:ops': 'ops'})
    return tree


def chosen(tree, ctx, key, resources='resources'):
    result = candidates.search(ctx, request.from_params(
        {resources: 'FPGA:1', 'member_key': key}))
    return {tree.name_of(rp) for areq in result['allocation_requests']
            for rp in areq['allocations']}


def claim(ctx, project, key, consumer='vm-1'):
    return allocations.claim(ctx, consumer, project, request.from_params(
        {'resources': 'FPGA:1', 'member_key': key}))


def refusal(call):
    with pytest.raises(device_errors.NoValidAllocation) as refused:
        call()
    return refused.value.code, type(refused.value), str(refused.value)


def test_a_member_carries_its_own_projects_key(pools):
    assert chosen(pools, member('A'), 'reservation:pool-1') == {'a_dev'}
    assert chosen(pools, member('A'), 'reservation:pool-1',
                  resources='resources1') == {'a_dev'}
    assert set(claim(member('A'), 'A', 'reservation:pool-1')) == {
        pools.rp['a_dev']}


def test_another_projects_key_answers_as_an_unknown_key(pools):
    assert chosen(pools, member('B'), 'reservation:pool-1') == set()
    assert chosen(pools, member('B'), UNKNOWN) == set()
    assert refusal(lambda: claim(member('B'), 'B', 'reservation:pool-1')) \
        == refusal(lambda: claim(member('B'), 'B', UNKNOWN))
    assert allocations.get_for_consumer(pools.ctx, 'vm-1') == {
        'allocations': {}, 'project_id': None, 'user_id': None}
    # Nothing of the pool was taken: A still gets its device.
    assert set(claim(member('A'), 'A', 'reservation:pool-1', 'vm-2')) == {
        pools.rp['a_dev']}


def test_a_comma_separated_list_names_several_projects(pools):
    for project in ('A', 'C'):
        assert chosen(pools, member(project), 'reservation:pool-ac') == {
            'ac_dev'}
    assert chosen(pools, member('B'), 'reservation:pool-ac') == set()


def test_suffixed_keys_name_more_projects(pools):
    for project in ('A', 'D'):
        assert chosen(pools, member(project), 'reservation:pool-ad') == {
            'ad_dev'}
    # filter_tenant_idx is not one of the keys.
    assert chosen(pools, member('E'), 'reservation:pool-ad') == set()


def test_the_operators_pool(pools):
    assert chosen(pools, member('A'), 'reservation:ops') == set()
    assert refusal(lambda: claim(member('A'), 'A', 'reservation:ops')) == \
        refusal(lambda: claim(member('A'), 'A', UNKNOWN))
    assert chosen(pools, admin(), 'reservation:ops') == {'ops_dev'}
    assert chosen(pools, service(), 'reservation:ops') == {'ops_dev'}
    assert set(claim(service(), 'A', 'reservation:ops')) == {
        pools.rp['ops_dev']}


def test_an_admin_acts_for_one_project(pools):
    assert set(claim(admin(), 'A', 'reservation:pool-1')) == {
        pools.rp['a_dev']}
    assert refusal(lambda: claim(admin(), 'B', 'reservation:pool-ac',
                                 'vm-2')) == \
        refusal(lambda: claim(admin(), 'B', UNKNOWN, 'vm-2'))


def test_a_key_opens_only_the_pools_it_may_be_carried_into(pools):
    """Without a required prefix a carried key does not pin the request:
    it still opens only the pools whose key the caller may carry."""
    CONF.set_override('required_member_prefix', [], 'placement')
    assert chosen(pools, member('B'), 'reservation:pool-1') == {'plain'}
    assert chosen(pools, member('B'), UNKNOWN) == {'plain'}
    assert chosen(pools, member('A'), 'reservation:pool-1') == {
        'plain', 'a_dev'}


# -- Leases ------------------------------------------------------------------

_HOUR = datetime.timedelta(hours=1)
START = (datetime.datetime.now(datetime.timezone.utc).replace(
    minute=0, second=0, microsecond=0) + 2 * _HOUR)


def _lease_body(key):
    """A lease of one FPGA from START for two hours (fixed dates, so that
    two refusals read the same)."""
    return {'start_date': START.isoformat(),
            'end_date': (START + 2 * _HOUR).isoformat(),
            'reservations': [{'resource_type': 'accelerator:FPGA',
                              'amount': 1, 'member_key': key}]}


@pytest.fixture
def leased(pools):
    QUOTAS.limits.set_registered_limit(pools.ctx, 'FPGA', 4)
    leases.LEASES.reset()
    return pools


def test_a_lease_carries_keys_for_its_project(leased):
    engine = leases.LEASES
    denied = refusal(lambda: engine.create(member('B'), 'B', _lease_body(
        'reservation:pool-1')))
    assert denied == refusal(lambda: engine.create(member('B'), 'B',
                                                   _lease_body(UNKNOWN)))
    assert engine.list(leased.ctx) == []
    made = engine.create(member('A'), 'A', _lease_body('reservation:pool-1'))
    assert made['status'] == 'PENDING'
    assert [a['resource_provider_name']
            for a in made['reservations'][0]['allocations']] == ['a_dev']


def test_a_lease_on_the_operators_pool_keeps_its_devices_on_a_rename(
        leased):
    engine = leases.LEASES
    assert refusal(lambda: engine.create(member('A'), 'A', _lease_body(
        'reservation:ops'))) == refusal(lambda: engine.create(
            member('A'), 'A', _lease_body(UNKNOWN)))
    made = engine.create(admin(), 'A', _lease_body('reservation:ops'))
    assert made['status'] == 'PENDING'
    # The project's member renames it: nothing is chosen again.
    changed = engine.update(member('A'), made['id'], {'name': 'renamed'})
    assert changed['name'] == 'renamed'
    assert [a['resource_provider_name']
            for a in changed['reservations'][0]['allocations']] == ['ops_dev']
    # A new window chooses again, with the member's rights: the operator's
    # key is not the member's to carry.
    later = (START + 3 * _HOUR).isoformat()
    assert refusal(lambda: engine.update(member('A'), made['id'], {
        'end_date': later})) == refusal(lambda: engine.create(
            member('A'), 'A', dict(_lease_body(UNKNOWN), end_date=later)))
    assert engine.get(leased.ctx, made['id']) == changed
    assert engine.update(admin(), made['id'], {'end_date': later})[
        'end_date'] == (START + 3 * _HOUR).isoformat()


def _revoke(tree, *tenants):
    """The operator takes project A off its pool: ``tenants`` keep it (the
    operator's pool when none)."""
    metadata = {'reservation:pool-1': 'a'}
    if tenants:
        metadata['filter_tenant_id'] = ','.join(tenants)
    aggregates.put(tree.ctx, tree.agg['a'], 'pool of A', metadata)


def _grow(made, amount, **extra):
    return dict(extra, reservations=[
        {'id': made['reservations'][0]['id'], 'amount': amount}])


@pytest.mark.parametrize('tenants', [(), ('C',)])
def test_a_revoked_key_changes_no_pending_lease(leased, tenants):
    """Issue 42: once A is off the pool (the operator's now, or C's), A's
    member cannot raise (or move) its pending lease there: the answer of
    a key no aggregate holds, and the lease stays as it was."""
    leased.provider('a_dev2', aggs=['a'], inventory={'FPGA': {'total': 4}})
    engine = leases.LEASES
    made = engine.create(member('A'), 'A', _lease_body('reservation:pool-1'))
    _revoke(leased, *tenants)
    unknown = dict(_lease_body(UNKNOWN))
    unknown['reservations'] = [dict(unknown['reservations'][0], amount=4)]
    assert refusal(lambda: engine.update(
        member('A'), made['id'], _grow(made, 4))) == refusal(
            lambda: engine.create(member('A'), 'A', unknown))
    later = (START + 3 * _HOUR).isoformat()
    assert refusal(lambda: engine.update(member('A'), made['id'], {
        'end_date': later})) == refusal(lambda: engine.create(
            member('A'), 'A', dict(_lease_body(UNKNOWN), end_date=later)))
    assert engine.get(leased.ctx, made['id']) == made
    # A rename chooses nothing: it needs no key.
    assert engine.update(member('A'), made['id'], {'name': 'kept'})[
        'reservations'] == made['reservations']
    # Whoever may carry the key now may grow the lease: the operator for
    # A, or C its own lease.
    owner, project = (member('C'), 'C') if tenants else (admin(), 'A')
    theirs = engine.create(owner, project, _lease_body('reservation:pool-1'))
    assert engine.update(owner, theirs['id'], _grow(theirs, 2))[
        'reservations'][0]['amount'] == 2


def test_a_revoked_key_neither_grows_nor_extends_an_active_lease(leased):
    leased.provider('a_dev2', aggs=['a'], inventory={'FPGA': {'total': 4}})
    engine = leases.LEASES
    end = (START + _HOUR).isoformat()
    made = engine.create(member('A'), 'A', dict(
        _lease_body('reservation:pool-1'), start_date='now', end_date=end))
    assert made['status'] == 'ACTIVE'
    before = QUOTAS.get_project_usage(leased.ctx, 'A')['FPGA']
    _revoke(leased, 'C')
    for change in (_grow(made, 2), {'end_date': (
            START + 2 * _HOUR).isoformat()}):
        with pytest.raises(device_errors.NoValidAllocation) as refused:
            engine.update(member('A'), made['id'], change)
        assert 'within the requested aggregates' in str(refused.value)
    assert engine.get(leased.ctx, made['id']) == made
    assert QUOTAS.get_project_usage(leased.ctx, 'A')['FPGA'] == before
    # An admin acting for A carries the key of C's pool no more either...
    with pytest.raises(device_errors.NoValidAllocation):
        engine.update(admin(), made['id'], _grow(made, 2))
    # ...but of the operator's.
    _revoke(leased)
    with pytest.raises(device_errors.NoValidAllocation):
        engine.update(member('A'), made['id'], _grow(made, 2))
    grown = engine.update(admin(), made['id'], _grow(made, 2))
    assert [(a['resource_provider_name'], a['amount'])
            for a in grown['reservations'][0]['allocations']] == [
        ('a_dev', 1), ('a_dev2', 1)]
