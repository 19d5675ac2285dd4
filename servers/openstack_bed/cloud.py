"""What a test does on the running bed, through the services' REST APIs
as their users: keystoneauth sessions, device profiles and flavors,
servers booted and deleted, ARQs, Placement's providers and allocations.
"""

import uuid

from servers.openstack_bed import identity
from servers.openstack_bed import processes
from servers.openstack_bed import stand_ins

COMPUTE_MICROVERSION = '2.95'
PLACEMENT_MICROVERSION = '1.39'
#: The group of one FPGA of the fake driver.
ONE_FAKE_FPGA = [{'resources:FPGA': '1',
                  'trait:CUSTOM_FAKE_DEVICE': 'required'}]


class Cloud:
    """REST helpers on a subclass's ``urls`` (``{service type: URL}``) and
    ``keystone`` (``identity.Keystone``); every call goes as the admin
    unless a ``session`` is given."""

    def __init__(self):
        self._sessions = {}
        self._flavors = {}

    # -- sessions ------------------------------------------------------------

    def session(self, username='admin', project='admin', system=False):
        """The (cached) keystoneauth session of ``username`` on
        ``project``: ``admin``/``admin``, ``demo``/``demo`` (a member), a
        service user (``nova``, ``placement``, ``cyborg``, ``cyquota``) on
        ``service``; ``system=True`` for a system-scoped one."""
        key = (username, project, system)
        if key not in self._sessions:
            self._sessions[key] = self.keystone.session(username, project,
                                                        system)
        return self._sessions[key]

    @property
    def admin(self):
        return self.session()

    @property
    def member(self):
        return self.session(identity.DEMO_USER, identity.DEMO_PROJECT)

    def service(self, username):
        """The session of service user ``username``."""
        return self.session(username, identity.SERVICE_PROJECT)

    def call(self, service_type, method, path, body=None, session=None,
             expect=(200, 201, 202, 204)):
        """``method`` ``path`` of the bed's ``service_type`` endpoint (at
        the microversion the helpers use); the answer, checked against
        ``expect`` (None: any status)."""
        headers = {}
        if service_type == 'compute':
            headers['OpenStack-API-Version'] = (
                'compute %s' % COMPUTE_MICROVERSION)
        elif service_type == 'placement':
            headers['OpenStack-API-Version'] = (
                'placement %s' % PLACEMENT_MICROVERSION)
        response = (session or self.admin).request(
            self.urls[service_type] + path, method, json=body,
            headers=headers, raise_exc=False)
        if expect is not None:
            assert response.status_code in expect, (
                method, path, response.status_code, response.text)
        return response

    # -- Cyborg and flavors -------------------------------------------------

    def device_profile(self, groups=ONE_FAKE_FPGA, name=None):
        """A new device profile of ``groups``; returns its name. (Cyborg's
        POST takes a list of profiles.)"""
        name = name or 'dp-%s' % uuid.uuid4().hex[:8]
        self.call('accelerator', 'POST', '/device_profiles',
                  [{'name': name, 'groups': groups}])
        return name

    def flavor(self, device_profile=None, vcpus=1, ram=64, disk=1):
        """A new flavor (public), with ``accel:device_profile`` when
        ``device_profile`` is given; returns its id. (A member may not
        boot a flavor of no disk.)"""
        flavor = self.call('compute', 'POST', '/flavors', {'flavor': {
            'name': 'flavor-%s' % uuid.uuid4().hex[:8], 'vcpus': vcpus,
            'ram': ram, 'disk': disk}}).json()['flavor']
        if device_profile:
            self.call('compute', 'POST',
                      '/flavors/%s/os-extra_specs' % flavor['id'],
                      {'extra_specs': {
                          'accel:device_profile': device_profile}})
        return flavor['id']

    def arqs(self, instance=None, session=None):
        """Cyborg's ARQs (of ``instance``, a server uuid, when given)."""
        path = '/accelerator_requests'
        if instance:
            path += '?instance=%s' % instance
        return self.call('accelerator', 'GET', path, session=session).json()[
            'arqs']

    # -- servers -------------------------------------------------------------

    def boot(self, flavor=None, device_profile=None, session=None,
             timeout=180, name=None):
        """Create a server (no networks, the stand-in image) of ``flavor``
        (an id) or of a flavor made once for ``device_profile`` (a name),
        as ``session`` (the admin by default); returns the server once
        ACTIVE or ERROR (failed-scheduling servers live in cell0: only
        Nova's API tells)."""
        if flavor is None:
            if device_profile not in self._flavors:
                self._flavors[device_profile] = self.flavor(device_profile)
            flavor = self._flavors[device_profile]
        server = self.call('compute', 'POST', '/servers', {'server': {
            'name': name or 'server-%s' % uuid.uuid4().hex[:8],
            'imageRef': stand_ins.IMAGE_ID, 'flavorRef': flavor,
            'networks': 'none'}}, session=session).json()['server']
        return processes.wait_for(
            'server %s ACTIVE or ERROR' % server['id'],
            lambda: self._settled(server['id'], session), timeout,
            alive=self._alive())

    def _settled(self, server_id, session):
        server = self.server(server_id, session)
        return server if server['status'] in ('ACTIVE', 'ERROR') else None

    def server(self, server_id, session=None):
        """Nova's view of the server (``status``, ``fault``, ...)."""
        return self.call('compute', 'GET', '/servers/%s' % server_id,
                         session=session).json()['server']

    def delete_server(self, server_id, session=None, timeout=120):
        """Delete the server; returns once Nova no longer shows it."""
        self.call('compute', 'DELETE', '/servers/%s' % server_id,
                  session=session)
        processes.wait_for(
            'server %s gone' % server_id,
            lambda: self.call('compute', 'GET', '/servers/%s' % server_id,
                              session=session, expect=None
                              ).status_code == 404,
            timeout, alive=self._alive())

    # -- Placement -----------------------------------------------------------

    def provider(self, name):
        """Placement's resource provider named ``name``, or None."""
        found = self.call('placement', 'GET',
                          '/resource_providers?name=%s' % name).json()[
            'resource_providers']
        return found[0] if found else None

    def device_provider(self, host):
        """The provider of the fake device of ``host`` once it has its
        inventory, or None."""
        device = self.provider('%s_FakeDevice' % host)
        if device is None:
            return None
        inventories = self.call(
            'placement', 'GET', '/resource_providers/%s/inventories'
            % device['uuid']).json()['inventories']
        return device if 'FPGA' in inventories else None

    def allocations(self, consumer):
        """Placement's allocations of ``consumer``: ``{provider uuid:
        {'resources': {class: amount}, ...}}``."""
        return self.call('placement', 'GET', '/allocations/%s'
                         % consumer).json()['allocations']

    def wait(self, what, predicate, timeout=60):
        """``predicate()``'s first true value within ``timeout`` s, the
        bed's processes checked alive meanwhile."""
        return processes.wait_for(what, predicate, timeout,
                                  alive=self._alive())

    def _alive(self):
        """Checks that stop a wait when a process died (the bed's)."""
        return []
