"""Drift between counts and records: found, reported and repaired."""

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota import exception
from cyquota import quota
from cyquota.quota import attachments
from cyquota.quota import repair
from tests.unit.test_engine import clock  # noqa: F401 (a fixture)
from tests.unit.test_leases import at, lease, pool  # noqa: F401,H301

Q = quota.QUOTAS


def _corrupt(sql):
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql(sql)


def test_consistent_books_have_no_drift(sqlite_db, ctx):
    uuids = Q.reserve(ctx, 'p1', {'FPGA': 2, 'GPU': 1}, consumer_id='vm1')
    Q.commit(ctx, 'p1', uuids)
    Q.reserve(ctx, 'p1', {'FPGA': 1})
    Q.release(ctx, 'p1', {'GPU': 1}, consumer_id='vm1')
    assert repair.find_drift(ctx) == []
    assert repair.unresolved_events(ctx) == []


def test_counts_that_disagree_are_found_and_repaired(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='a'))
    Q.reserve(ctx, 'p2', {'GPU': 3})
    _corrupt("UPDATE quota_usages SET used = 9 WHERE project_id = 'p1'")
    _corrupt("UPDATE quota_usages SET reserved = 0 WHERE project_id = 'p2'")

    drift = repair.find_drift(ctx)
    assert drift == [
        repair.Drift('p1', 'FPGA', 'used', 9, 2),
        repair.Drift('p2', 'GPU', 'reserved', 0, 3)]

    changes, acknowledged = repair.sync(ctx, Q.ledger.upkeep)
    assert changes == [
        dict(project_id='p1', resource='FPGA', field='used', old=9, new=2),
        dict(project_id='p2', resource='GPU', field='reserved', old=0,
             new=3)]
    assert acknowledged == 0
    assert repair.find_drift(ctx) == []
    assert Q.get_project_usage(ctx, 'p1')['FPGA']['used'] == 2


def test_release_below_zero_is_an_event_until_acknowledged(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='a'))
    Q.release(ctx, 'p1', {'FPGA': 3}, consumer_id='a')
    events = repair.unresolved_events(ctx)
    assert [(e['kind'], e['requested'], e['applied']) for e in events] == [
        ('release_below_zero', 3, 1), ('consumer_release_below_zero', 3, 1)]
    # The counts themselves agree with the records (both stopped at 0).
    assert repair.find_drift(ctx) == []
    assert repair.sync(ctx, Q.ledger.upkeep) == ([], 2)
    assert repair.unresolved_events(ctx) == []


def test_scan_goes_batch_by_batch_with_progress(sqlite_db, ctx):
    CONF.set_override('batch_size', 3, 'quota')
    for n in range(5):
        Q.reserve(ctx, 'p%d' % n, {'FPGA': 1, 'GPU': 1})
    _corrupt("UPDATE quota_usages SET reserved = 4")
    seen = []
    drift = repair.find_drift(ctx, progress=seen.append)
    assert seen == [3, 6, 9, 10]
    assert len(drift) == 10
    assert repair.count_usage_rows(ctx) == 10
    changes, _ = repair.sync(ctx, Q.ledger.upkeep, project_id='p3')
    assert {(c['project_id'], c['new']) for c in changes} == {('p3', 1)}
    with db_api.get_engine().connect() as conn:
        fixed = conn.execute(sa.text(
            "SELECT reserved FROM quota_usages WHERE project_id = 'p3'"))
        assert [r[0] for r in fixed] == [1, 1]


def _report(ctx, host, *items):
    attachments.record_report(ctx, host, [
        dict(project_id=p, resource=r, consumer_id=c, amount=n)
        for p, r, c, n in items])


def test_no_report_no_report_drift(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1'))
    assert repair.find_report_drift(ctx) == []


def test_agent_reports_are_compared_and_adopted(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1'))
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'GPU': 1}, consumer_id='vm2'))
    Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm3')  # attaching
    # vm1 really holds one FPGA, vm2's GPU is gone, vm4 was attached
    # behind the ledger's back; vm3's attach is still in progress.
    _report(ctx, 'host-a', ('p1', 'FPGA', 'vm1', 1), ('p1', 'FPGA', 'vm3', 1))
    _report(ctx, 'host-b', ('p1', 'GPU', 'vm4', 2))
    assert repair.find_report_drift(ctx) == [
        repair.ReportDrift('p1', 'FPGA', 'vm1', 2, 1),
        repair.ReportDrift('p1', 'GPU', 'vm2', 1, 0),
        repair.ReportDrift('p1', 'GPU', 'vm4', 0, 2)]
    # A plain sync trusts the ledger's own records: nothing to repair.
    assert repair.sync(ctx, Q.ledger.upkeep) == ([], 0)

    changes, _ = repair.sync(ctx, Q.ledger.upkeep, from_reports=True)
    assert changes == [
        dict(project_id='p1', resource='FPGA', field='consumer vm1', old=2,
             new=1),
        dict(project_id='p1', resource='GPU', field='consumer vm2', old=1,
             new=0),
        dict(project_id='p1', resource='GPU', field='consumer vm4', old=0,
             new=2),
        dict(project_id='p1', resource='FPGA', field='used', old=2, new=1),
        dict(project_id='p1', resource='GPU', field='used', old=1, new=2)]
    assert repair.find_report_drift(ctx) == []
    assert repair.find_drift(ctx) == []
    usage = Q.get_project_usage(ctx, 'p1')
    assert (usage['FPGA']['used'], usage['FPGA']['reserved'],
            usage['GPU']['used']) == (1, 1, 2)


def test_tree_usage_drift_is_found_and_repaired(sqlite_db, ctx):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    Q.reset()
    try:
        Q.limits.set_project(ctx, 'root')
        Q.limits.set_project(ctx, 'child', parent_id='root')
        Q.commit(ctx, 'child', Q.reserve(ctx, 'child', {'FPGA': 2}))
        Q.reserve(ctx, 'root', {'FPGA': 1})
        assert repair.find_tree_drift(ctx, Q.ledger.model) == []
        _corrupt("UPDATE tree_usages SET used = 7 WHERE resource = 'FPGA'")

        drift = repair.find_tree_drift(ctx, Q.ledger.model)
        assert [(d.root_id, d.resource, d.field, d.recorded, d.expected)
                for d in drift] == [('root', 'FPGA', 'used', 7, 2)]
        changes, _ = repair.sync(ctx, Q.ledger.upkeep)
        assert changes == [dict(project_id='root', resource='FPGA',
                                field='tree used', old=7, new=2)]
        assert repair.find_tree_drift(ctx, Q.ledger.model) == []
        tree = Q.get_project_usage(ctx, 'child')['FPGA']['tree']
        assert (tree['used'], tree['reserved']) == (2, 1)
    finally:
        CONF.clear_override('enforcement_model', 'quota')
        Q.reset()


def test_flat_model_has_no_tree_drift(sqlite_db, ctx):
    assert repair.find_tree_drift(ctx, Q.ledger.model) == []


def _events(ctx):
    with db_api.get_engine().connect() as conn:
        return [dict(row) for row in conn.execute(sa.text(
            'SELECT project_id, resource, consumer_id, kind, requested, '
            'applied, detail, resolved_at FROM drift_events ORDER BY id'))
            .mappings()]


def test_placement_holdings_are_adopted_and_recorded(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1'))
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'GPU': 1}, consumer_id='vm2'))
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 1}))  # nobody's
    Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm3')  # attaching
    assert repair.usage_counts(ctx) == {
        ('p1', 'FPGA'): {'used': 3, 'leased': 0},
        ('p1', 'GPU'): {'used': 1, 'leased': 0}}
    assert repair.consumer_projects(ctx, {'vm1', 'vm3', 'vm9'}) == {
        'vm1': 'p1'}
    # Placement: vm1 holds one FPGA, vm2 nothing, vm4 two GPUs the ledger
    # never saw, vm3 is being attached, and p2's vm5 holds an FPGA.
    placement = {'p1': {('FPGA', 'vm1'): 1, ('FPGA', 'vm3'): 1,
                        ('GPU', 'vm4'): 2},
                 'p2': {('FPGA', 'vm5'): 1}}
    assert repair.placement_adoption(ctx, placement) == {
        'p1': {('FPGA', ''): 0, ('FPGA', 'vm1'): 1, ('GPU', 'vm2'): 0,
               ('GPU', 'vm4'): 2},
        'p2': {('FPGA', 'vm5'): 1}}
    assert repair.placement_adoption(ctx, placement, 'p2') == {
        'p2': {('FPGA', 'vm5'): 1}}

    changes, acknowledged = repair.sync(ctx, Q.ledger.upkeep,
                                        placement=placement)
    assert [(c['project_id'], c['resource'], c['field'], c['old'], c['new'])
            for c in changes] == [
        ('p1', 'FPGA', 'consumer (none)', 1, 0),
        ('p1', 'FPGA', 'consumer vm1', 2, 1),
        ('p1', 'GPU', 'consumer vm2', 1, 0),
        ('p1', 'GPU', 'consumer vm4', 0, 2),
        ('p2', 'FPGA', 'consumer vm5', 0, 1),
        ('p1', 'FPGA', 'used', 3, 1),
        ('p1', 'GPU', 'used', 1, 2),
        ('p2', 'FPGA', 'used', 0, 1)]
    assert acknowledged == 0
    events = _events(ctx)
    assert [(e['project_id'], e['consumer_id'], e['kind'], e['requested'],
             e['applied']) for e in events] == [
        ('p1', '', 'placement_adopted', -1, -1),
        ('p1', 'vm1', 'placement_adopted', -1, -1),
        ('p1', 'vm2', 'placement_adopted', -1, -1),
        ('p1', 'vm4', 'placement_adopted', 2, 2),
        ('p2', 'vm5', 'placement_adopted', 1, 1),
        ('p1', None, 'placement_adopted', -2, -2),
        ('p1', None, 'placement_adopted', 1, 1),
        ('p2', None, 'placement_adopted', 1, 1)]
    assert events[1]['detail'] == 'consumer vm1 2 -> 1, from Placement'
    assert all(e['resolved_at'] is not None for e in events)
    # The books agree with themselves, and with Placement.
    assert not repair.check(ctx, Q.ledger.model)
    assert repair.placement_adoption(ctx, placement) == {}
    assert repair.usage_counts(ctx) == {
        ('p1', 'FPGA'): {'used': 1, 'leased': 0},
        ('p1', 'GPU'): {'used': 2, 'leased': 0},
        ('p2', 'FPGA'): {'used': 1, 'leased': 0}}
    assert repair.sync(ctx, Q.ledger.upkeep, placement=placement) == ([], 0)
    assert len(_events(ctx)) == 8


def test_reports_and_placement_are_not_adopted_at_once(sqlite_db, ctx):
    with pytest.raises(exception.Invalid, match='not both'):
        Q.repair(ctx, from_reports=True, placement={})


def test_other_repairs_record_no_adoption(sqlite_db, ctx):
    Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm1'))
    _corrupt("UPDATE quota_usages SET used = 9")
    assert len(repair.sync(ctx, Q.ledger.upkeep)[0]) == 1
    assert _events(ctx) == []


@pytest.mark.usefixtures('pool')
def test_an_active_lease_is_not_adopted_from_placement(ctx):
    made = lease(ctx, 3, 'now', at(2))
    assert repair.usage_counts(ctx) == {
        ('p1', 'FPGA'): {'used': 3, 'leased': 3}}
    assert repair.consumer_projects(ctx, [made['id']]) == {
        made['id']: 'p1'}
    assert repair.placement_adoption(ctx, {}) == {}
    assert repair.placement_adoption(ctx, {'p1': {}}, 'p1') == {}


def test_lease_copies_that_disagree_are_found(pool, ctx):  # noqa: F811
    pending = lease(ctx, 1, at(1), at(2))
    active = lease(ctx, 1, 'now', at(2), project='p2')
    assert Q.check_drift(ctx).leases == []
    _corrupt("UPDATE lease_reservations SET status = 'ENDED' "
             "WHERE lease_id = '%s'" % pending['id'])
    _corrupt("UPDATE lease_allocations SET lease_id = 'gone' "
             "WHERE lease_id = '%s'" % active['id'])
    [reservation] = pending['reservations']
    found = Q.check_drift(ctx).leases
    assert sorted((d.lease_id, d.copy, d.field) for d in found) == sorted([
        (pending['id'], 'lease_reservations', 'status'),
        ('gone', 'lease_allocations', 'end_date'),
        ('gone', 'lease_allocations', 'start_date'),
        ('gone', 'lease_allocations', 'status')])
    says = {(d.lease_id, d.field): (d.project_id, d.lease_says, d.copy_says)
            for d in found}
    assert says[pending['id'], 'status'] == ('p1', 'PENDING', 'ENDED')
    assert says['gone', 'status'] == (None, None, 'ACTIVE')
    assert [d.row for d in found if d.lease_id == pending['id']] == [
        reservation['id']]
    assert [d.lease_id for d in Q.check_drift(ctx, 'p1').leases] == [
        pending['id']]
