"""What the binds' books miss in a real cloud, and who mends it (SPEC
3.7): an ARQ leaked by a delete that never reached Cyborg is found by the
witness and repaired by ``quota sync --from-placement``; a bind Cyborg
finishes after answering is resolved by cyquota's conductor from Cyborg's
ARQ API."""

import contextlib
import os
import signal
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.functional.openstack import books
from tests.functional.openstack import conftest

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]

#: Seconds a reservation is seen to stay reserved: rounds of the
#: conductor's bind check.
ROUNDS = 3 * conftest.ROUND


#: What nova-compute logs once it starts (again).
COMPUTE_STARTING = 'Starting compute node'
DRIFT = 'cyquota_placement_drift'


# -- an ARQ leaked by a delete ------------------------------------------------

def _compute_service(bed, host):
    [service] = bed.call('compute', 'GET', '/os-services?binary=nova-compute'
                         '&host=%s' % host).json()['services']
    return service


def _kill(bed, name):
    """SIGKILL to the bed's process ``name`` (out of the bed's watch)."""
    process = bed.procs.running.pop(name)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def _compute_dead(bed, host):
    """nova-compute of ``host`` killed and forced down in Nova, as an
    operator fences a dead host (Nova's API then deletes its servers
    itself); afterwards started again as the bed starts it, no longer
    forced down, and up."""
    name = 'nova-compute-' + host
    starts = bed.log(name).count(COMPUTE_STARTING)
    _kill(bed, name)
    service = _compute_service(bed, host)
    bed.call('compute', 'PUT', '/os-services/%s' % service['id'],
             {'forced_down': True})
    try:
        yield
    finally:
        bed.procs.start(name, [
            bed.nova.venv / 'bin' / 'nova-compute', '--config-file',
            bed.nova.home / ('compute-%s.conf' % host)])
        bed.call('compute', 'PUT', '/os-services/%s' % service['id'],
                 {'forced_down': False})
        bed.wait('nova-compute of %s up again' % host, lambda: (
            bed.log(name).count(COMPUTE_STARTING) > starts
            and _compute_service(bed, host)['state'] == 'up'), 180)


@contextlib.contextmanager
def _cyborg_api_away(bed):
    """cyborg-api (and the filter in it) stopped; started again as the
    bed starts it afterwards."""
    bed.procs.stop('cyborg-api')
    try:
        yield
    finally:
        bed.cyborg.start_api()
        bed.cyborg.wait_for_api()


def _drift(bed):
    return books.metric(bed, DRIFT, resource='FPGA', field='used')


def _against_placement(bed, project):
    return books.manage(bed, 'quota', 'check', '--against-placement',
                        '--project', project)


def _sync_from_placement(bed, project):
    repair = books.manage(bed, 'quota', 'sync', '--from-placement',
                          '--project', project)
    assert repair.returncode == 0, repair.stdout + repair.stderr
    return repair


def test_an_arq_leaked_by_a_delete_is_found_and_repaired(bed, fpga_profile):
    """nova-compute killed and its host forced down, Nova's API deletes
    the server itself (``_local_delete``): it deletes the ARQs through
    Cyborg's API (so the filter releases), and only when that call fails
    does an ARQ leak, Nova going on all the same. Cyborg's API is away for
    that delete here: the ARQ stays Bound, Placement's allocation is gone,
    the ledger still counts it."""
    project = books.demo_project(bed)
    before = books.used(bed, project)
    server = bed.boot(device_profile=fpga_profile, session=bed.member)
    try:
        assert server['status'] == 'ACTIVE', server.get('fault')
        assert books.used(bed, project) == before + 1
        host = bed.server(server['id'])['OS-EXT-SRV-ATTR:host']
        [arq] = bed.arqs(instance=server['id'])

        with _compute_dead(bed, host):
            # Its host down, Nova's API deletes the server itself: its
            # call to Cyborg fails (logged), it frees Placement's
            # allocation and destroys the instance all the same.
            with _cyborg_api_away(bed):
                bed.delete_server(server['id'], session=bed.member)
            assert ('Failed to delete accelerator requests for instance %s'
                    % server['id']) in bed.log('nova-api')

            [left] = bed.arqs(instance=server['id'])
            assert (left['uuid'], left['state'], left['hostname']) == (
                arq['uuid'], 'Bound', host)
            assert bed.allocations(server['id']) == {}
            assert books.used(bed, project) == before + 1

            check = _against_placement(bed, project)
            assert check.returncode == 1, check.stdout + check.stderr
            [row] = [line for line in check.stdout.splitlines()
                     if project in line]
            assert [cell.strip() for cell in row.split('|')[2:6]] == [
                'FPGA', str(before + 1), str(before), '-1']
            bed.wait('the witness counting the drift',
                     lambda: _drift(bed) == 1, 60)

            repair = _sync_from_placement(bed, project)
            assert 'consumer %s' % server['id'] in repair.stdout
            assert books.used(bed, project) == before
            assert _against_placement(bed, project).returncode == 0
            bed.wait('the witness seeing no drift',
                     lambda: _drift(bed) == 0, 60)
    finally:
        if bed.call('compute', 'GET', '/servers/%s' % server['id'],
                    expect=None).status_code != 404:
            bed.delete_server(server['id'])
        # The leftover ARQ, deleted as Nova deletes an instance's: the
        # filter releases what the sync already took off (drift events
        # that the next sync acknowledges).
        books.cyborg_as_nova(bed, 'DELETE', '/accelerator_requests'
                             '?instance=%s' % server['id'])
        _sync_from_placement(bed, project)
    assert bed.arqs(instance=server['id']) == []
    assert books.used(bed, project) == before
    assert _against_placement(bed, project).returncode == 0
    drift = books.manage(bed, 'quota', 'check', '--project', project)
    assert drift.returncode == 0, drift.stdout


# -- asynchronous binds -------------------------------------------------------

def _bind_started(bed, arq_uuid, instance_uuid, host):
    """The ARQ as Cyborg leaves it while an asynchronous bind (an FPGA
    being programmed) runs after the PATCH was answered: BindStarted, bound
    fields set, no attach handle yet (the fake driver binds instantly, so
    its database is set as ``ExtARQJobMixin.start_bind_job`` sets it)."""
    engine = books.cyborg_database(bed)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "UPDATE extended_accelerator_requests SET state = 'BindStarted', "
            "instance_uuid = :instance, hostname = :host, "
            "device_rp_uuid = :rp WHERE uuid = :arq"), {
                'instance': instance_uuid, 'host': host,
                'rp': bed.device_provider(host)['uuid'], 'arq': arq_uuid})
    engine.dispose()


def _bind_ended(bed, arq_uuid, state):
    """The end of that bind in Cyborg's database: ``Bound`` with a free
    attach handle of the device taken (as ``ExtARQ.bind`` does), or
    ``BindFailed``."""
    engine = books.cyborg_database(bed)
    with engine.begin() as conn:
        if state == 'Bound':
            handle, deployable = conn.execute(sa.text(
                'SELECT id, deployable_id FROM attach_handles '
                'WHERE NOT in_use ORDER BY id LIMIT 1')).one()
            conn.execute(sa.text(
                'UPDATE attach_handles SET in_use = 1 WHERE id = :id'),
                {'id': handle})
            conn.execute(sa.text(
                'UPDATE extended_accelerator_requests SET attach_handle_id '
                '= :handle, deployable_id = :deployable WHERE uuid = :arq'),
                {'handle': handle, 'deployable': deployable, 'arq': arq_uuid})
        conn.execute(sa.text(
            'UPDATE extended_accelerator_requests SET state = :state '
            'WHERE uuid = :arq'), {'state': state, 'arq': arq_uuid})
    engine.dispose()


def _reservation(bed, project, arq_uuid):
    [found] = [r for r in books.reservations(bed, project)
               if r['request_id'] == 'arq-%s' % arq_uuid]
    return found


def test_asynchronous_binds_are_resolved_by_the_conductor(bed, fpga_profile):
    """A bind Cyborg answered while BindStarted stays reserved until the
    ARQ's state, read through Cyborg's REST by cyquota's conductor, is
    Bound (commit) or BindFailed (rollback). Cyborg's fake driver binds
    at once, so the filter never sees BindStarted: each ARQ is put in that
    state in Cyborg's database, with the reservation the filter makes."""
    project = books.demo_project(bed)
    host = bed.hosts[0]
    before = books.usage(bed, project)
    binds = {}
    for end in ('Bound', 'BindFailed'):
        [arq] = bed.call('accelerator', 'POST', '/accelerator_requests', {
            'device_profile_name': fpga_profile}, session=bed.member).json()[
            'arqs']
        instance = str(uuid.uuid4())
        # What the filter reserves for a bind Cyborg answers BindStarted.
        bed.call(books.QUOTA, 'POST', '/v1/reservations', {
            'project_id': project, 'deltas': {'FPGA': 1}, 'expire': 600,
            'request_id': 'arq-%s' % arq['uuid'], 'consumer_id': instance},
            session=bed.service('cyquota'))
        _bind_started(bed, arq['uuid'], instance, host)
        binds[end] = arq['uuid'], instance
    try:
        # The conductor reads them every round and waits while Cyborg
        # binds.
        time.sleep(ROUNDS)
        for arq_uuid, instance in binds.values():
            [seen] = bed.arqs(instance=instance)
            assert seen['state'] == 'BindStarted'
            assert _reservation(bed, project, arq_uuid)['status'] == (
                'reserved')
        waiting = books.usage(bed, project)
        assert (waiting['used'], waiting['reserved']) == (
            before['used'], before['reserved'] + 2)

        for end, (arq_uuid, _) in binds.items():
            _bind_ended(bed, arq_uuid, end)
        committed = binds['Bound'][0]
        rolled_back = binds['BindFailed'][0]
        bed.wait('the conductor resolving the binds', lambda: (
            _reservation(bed, project, committed)['status'],
            _reservation(bed, project, rolled_back)['status']) == (
            'committed', 'rolled_back'), 60)
        after = books.usage(bed, project)
        assert (after['used'], after['reserved']) == (
            before['used'] + 1, before['reserved'])
        assert _reservation(bed, project, committed)['consumer_id'] == (
            binds['Bound'][1])
    finally:
        # Nova's delete of the instances: the filter releases the bound one.
        for _, instance in binds.values():
            books.cyborg_as_nova(bed, 'DELETE',
                                 '/accelerator_requests?instance=%s'
                                 % instance)
    done = books.usage(bed, project)
    assert (done['used'], done['reserved']) == (before['used'],
                                                before['reserved'])
