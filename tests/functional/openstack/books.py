"""What the bed's tests ask cyquota (its REST API, as the bed's admin or
demo member) and its command line (with the bed's cyquota.conf)."""

import contextlib
import datetime
import subprocess

import sqlalchemy as sa

from servers import api_server
from servers.openstack_bed import identity

QUOTA = 'accelerator-quota'


def demo_project(bed):
    """The id of the project the demo member boots in."""
    return bed.keystone.ids['project:' + identity.DEMO_PROJECT]


def usage(bed, project_id, resource='FPGA'):
    """cyquota's usage of ``resource``: ``{used, reserved, limit, ...}``."""
    document = bed.call(QUOTA, 'GET', '/v1/quota_usages/%s' % project_id)
    return document.json()['quota_usage']['resources'][resource]


def used(bed, project_id, resource='FPGA'):
    return usage(bed, project_id, resource)['used']


def set_limit(bed, project_id, limit, resource='FPGA'):
    """cyquota's own (local source) limit of the project."""
    bed.call(QUOTA, 'PUT', '/v1/limits/%s/%s' % (project_id, resource),
             {'resource_limit': limit})


def clear_limit(bed, project_id, resource='FPGA'):
    bed.call(QUOTA, 'DELETE', '/v1/limits/%s/%s' % (project_id, resource),
             expect=(204, 404))


def boot_refused_at_bind(bed, device_profile):
    """A server of the demo member that cyquota refuses at bind (its own
    limit of the project set to what it uses for the boot); Nova's view of
    it."""
    project_id = demo_project(bed)
    set_limit(bed, project_id, used(bed, project_id))
    try:
        return bed.boot(device_profile=device_profile, session=bed.member)
    finally:
        clear_limit(bed, project_id)


def reservations(bed, project_id, status=None):
    path = '/v1/reservations?project_id=%s' % project_id
    if status:
        path += '&status=%s' % status
    return bed.call(QUOTA, 'GET', path).json()['reservations']


def refusals(bed, consumer_id):
    return bed.call(QUOTA, 'GET', '/v1/refusals?consumer_id=%s'
                    % consumer_id).json()['refusals']


def lease(bed, *amounts, start=None, hours=1):
    """A lease for the demo project of one reservation of FPGAs per amount
    (each from one device), starting now (or ``start`` from now, a
    timedelta) for ``hours``; returns its document."""
    now = datetime.datetime.now(datetime.timezone.utc)
    begin = now + start if start else None
    end = (begin or now) + datetime.timedelta(hours=hours)
    body = {'lease': {
        'end_date': end.isoformat(timespec='seconds'),
        'reservations': [{'resource_type': 'accelerator:FPGA',
                          'amount': amount} for amount in amounts]}}
    if begin:
        body['lease']['start_date'] = begin.isoformat(timespec='seconds')
    answer = bed.call(QUOTA, 'POST', '/v1/leases', body, session=bed.member,
                      expect=None)
    assert answer.status_code == 201, answer.text
    return answer.json()['lease']


def end_lease(bed, lease_id):
    bed.call(QUOTA, 'DELETE', '/v1/leases/%s' % lease_id, session=bed.member)


def manage(bed, *args):
    """``cyquota-manage`` with the bed's cyquota.conf; the finished
    process (output in ``stdout``/``stderr``)."""
    return subprocess.run(
        [str(api_server.BIN / 'cyquota-manage'), '--config-file',
         str(bed.cyquota.config), *args],
        capture_output=True, text=True, timeout=300)


def metric(bed, name, **labels):
    """The value of the series ``name{labels}`` of cyquota's ``/metrics``
    (read as the admin), or None."""
    for line in bed.call(QUOTA, 'GET', '/metrics').text.splitlines():
        series, _, value = line.rpartition(' ')
        found, _, rest = series.partition('{')
        pairs = [pair.split('=', 1) for pair in rest.rstrip('}').split(',')
                 if pair]
        if found == name and {key: text.strip('"') for key, text in pairs
                              } == labels:
            return float(value)
    return None


def cyborg_database(bed):
    """An engine on Cyborg's own database (no pool: dispose of it)."""
    [url] = [url for url in bed.databases.urls if url.split('?')[0]
             .endswith('_cyborg')]
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def cyborg_as_nova(bed, method, path, body=None, expect=(200, 201, 202, 204)):
    """``method`` ``path`` of Cyborg's API as Nova calls it: its service
    user with a service token (Cyborg binds, unbinds and deletes by
    instance only with one); the answer, checked against ``expect``."""
    nova = bed.service('nova')
    response = nova.request(
        bed.urls['accelerator'] + path, method, json=body, raise_exc=False,
        headers={'X-Service-Token': nova.get_token()})
    if expect is not None:
        assert response.status_code in expect, (
            method, path, response.status_code, response.text)
    return response


@contextlib.contextmanager
def attach_handles_taken(bed):
    """Every free attach handle of Cyborg's fake devices marked in use in
    Cyborg's own database (what a device fully attached elsewhere looks
    like), so that a bind fails in Cyborg; freed again afterwards."""
    engine = cyborg_database(bed)
    mark = sa.text('UPDATE attach_handles SET in_use = :in_use '
                   'WHERE id IN :ids').bindparams(
        sa.bindparam('ids', expanding=True))
    with engine.begin() as conn:
        taken = [row[0] for row in conn.execute(sa.text(
            'SELECT id FROM attach_handles WHERE NOT in_use'))]
        conn.execute(mark, {'ids': taken, 'in_use': 1})
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(mark, {'ids': taken, 'in_use': 0})
        engine.dispose()


def keystone_limit(bed, project_id, amount, resource='class:FPGA'):
    """A Keystone limit of Nova's compute service for the project (its
    registered limit made first when there is none); returns its id.
    Limits are a system administrator's."""
    system = bed.session(system=True)
    service = bed.keystone.ids['service:compute']
    registered = bed.call('identity', 'GET', '/registered_limits?service_id='
                          '%s&resource_name=%s' % (service, resource),
                          session=system).json()['registered_limits']
    if not registered:
        bed.call('identity', 'POST', '/registered_limits', {
            'registered_limits': [{
                'service_id': service, 'region_id': identity.REGION,
                'resource_name': resource, 'default_limit': 1000}]},
            session=system)
    return bed.call('identity', 'POST', '/limits', {'limits': [{
        'service_id': service, 'region_id': identity.REGION,
        'project_id': project_id, 'resource_name': resource,
        'resource_limit': amount}]}, session=system).json()['limits'][0]['id']


def delete_keystone_limit(bed, limit_id):
    bed.call('identity', 'DELETE', '/limits/%s' % limit_id,
             session=bed.session(system=True))


def set_trait(bed, host, trait, present=True):
    """Add (or take off) the custom ``trait`` of ``host``'s compute node
    provider, keeping the traits Nova set."""
    provider = bed.provider(host)
    path = '/resource_providers/%s/traits' % provider['uuid']
    bed.call('placement', 'PUT', '/traits/%s' % trait)
    traits = set(bed.call('placement', 'GET', path).json()['traits'])
    traits = traits | {trait} if present else traits - {trait}
    bed.call('placement', 'PUT', path, {
        'traits': sorted(traits),
        'resource_provider_generation': provider['generation']})
