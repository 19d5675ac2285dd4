"""cyquota's devstack plugin, run: its stack phases under a shim of
devstack's functions that does their work on the bed (Keystone's user,
service, endpoint and limits, a database, Cyborg's files), then cyquota
started from the configuration the plugin wrote, and a bind through a
cyborg-api on the plugin-edited pipeline counted by that cyquota."""

import configparser
import sys

import pytest

from servers.openstack_bed import devstack as devstack_host
from tests.functional.openstack import books

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]


@pytest.fixture
def devstack(bed):
    """The plugin's devstack host on the bed, cleaned up afterwards."""
    host = devstack_host.Devstack(bed)
    try:
        host.prepare()
        yield host
    finally:
        host.clean()


def _catalog(bed, service_name):
    """``[(region, interface, url)]`` of the service named so."""
    keystone = bed.keystone.url
    [service] = [service for service in bed.admin.get(
        keystone + '/services').json()['services']
        if service['name'] == service_name]
    return service['type'], sorted(
        (endpoint['region_id'], endpoint['interface'], endpoint['url'])
        for endpoint in bed.admin.get(
            keystone + '/endpoints?service_id=%s' % service['id']
        ).json()['endpoints'])


def _fpgas(bed, devstack, session=None):
    """The demo project's FPGA usage in the plugin's cyquota."""
    answer = (session or bed.admin).get(
        '%s/v1/quota_usages/%s' % (devstack.url, books.demo_project(bed)),
        raise_exc=False)
    assert answer.status_code == 200, answer.text
    return answer.json()['quota_usage']['resources']['FPGA']


def _as_nova(bed):
    """What Nova sends Cyborg besides the user's token."""
    return {'X-Service-Token': bed.service('nova').get_token()}


def _bound(bed, instance):
    states = [arq['state'] for arq in bed.arqs(instance)]
    return states and set(states) == {'Bound'}


def test_the_plugin_stacks_a_cyquota_that_counts_cyborgs_binds(
        bed, devstack, fpga_profile):
    devstack.stack()
    sys.__stderr__.write('devstack phases on the bed: %s\n' % ', '.join(
        '%s %.1f s' % item for item in devstack.phase_seconds().items()))

    assert _catalog(bed, devstack.user) == ('accelerator-quota', [
        (devstack.region, 'public', devstack.url)])
    assert set(devstack.run_processes()) == {'cyquota-api',
                                             'cyquota-conductor'}
    devstack.start_conductor()

    # A member reads its usage; the limit is the plugin's registered one.
    usage = _fpgas(bed, devstack, session=bed.member)
    assert (usage['used'], usage['limit']) == (0, 10)
    # The conductor mirrors the bed's Placement, the witness agrees.
    device = bed.device_provider(bed.hosts[0])
    bed.wait('the plugin\'s cyquota mirroring %s' % device['uuid'],
             lambda: device['uuid'] in bed.admin.get(
                 devstack.url + '/v1/resource_providers').text, 120)
    check = devstack.manage('quota', 'check', '--against-placement')
    assert check.returncode == 0, check.stdout + check.stderr

    paste = configparser.ConfigParser(interpolation=None)
    paste.read(devstack.cyborg_dir / 'api-paste.ini')
    assert 'authtoken cyquota_bind' in paste['pipeline:main']['pipeline']
    devstack.start_cyborg_api()
    before_bed = books.used(bed, books.demo_project(bed))
    # Cyborg tells Nova of the bind: the instance must be a server of
    # Nova's (booted without accelerators, on the device's host).
    flavor = bed.flavor()
    server = bed.boot(flavor=flavor, session=bed.member)
    arqs = []
    try:
        assert server['status'] == 'ACTIVE', server.get('fault')
        instance = server['id']
        host = bed.server(instance)['OS-EXT-SRV-ATTR:host']
        device = bed.device_provider(host)
        arqs = bed.member.post(
            devstack.cyborg_url + '/accelerator_requests',
            json={'device_profile_name': fpga_profile}).json()['arqs']
        bound = bed.member.patch(
            devstack.cyborg_url + '/accelerator_requests', json={
                arq['uuid']: [
                    {'path': '/' + field, 'op': 'add', 'value': value}
                    for field, value in (
                        ('hostname', host),
                        ('device_rp_uuid', device['uuid']),
                        ('instance_uuid', instance))]
                for arq in arqs}, headers=_as_nova(bed), raise_exc=False)
        assert bound.status_code == 202, bound.text
        bed.wait('the ARQs of %s Bound' % instance,
                 lambda: _bound(bed, instance), 120)

        assert _fpgas(bed, devstack)['used'] == len(arqs) == 1
        # Counted by the plugin's cyquota alone.
        assert books.used(bed, books.demo_project(bed)) == before_bed

        bed.member.delete(
            devstack.cyborg_url + '/accelerator_requests?arqs=%s'
            % ','.join(arq['uuid'] for arq in arqs), headers=_as_nova(bed))
        arqs = []

        assert bed.arqs(instance) == []
        assert _fpgas(bed, devstack)['used'] == 0
    finally:
        for arq in arqs:
            bed.call('accelerator', 'DELETE', '/accelerator_requests?arqs=%s'
                     % arq['uuid'], expect=None)
        bed.delete_server(server['id'])
        bed.call('compute', 'DELETE', '/flavors/%s' % flavor)
