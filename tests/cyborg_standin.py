"""A stand-in for Cyborg 17's API behind authtoken, for unit tests of
cyquota's filter: the ARQ and device profile representations and the
PATCH / DELETE answers of ``cyborg/api/controllers/v2``, without Cyborg's
conductor (a bind ends in the state the test chose)."""

import json
import uuid

import webob
import webob.dec

ARQS = '/v2/accelerator_requests'
PROFILES = '/v2/device_profiles'
_BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')


def _error(status, message):
    """Cyborg's error shape (ParsableErrorMiddleware around wsme)."""
    return webob.Response(status=status, json_body={
        'error_message': json.dumps({'faultcode': 'Client',
                                     'faultstring': message,
                                     'debuginfo': None})})


class CyborgStandIn:
    """ARQs and device profiles in memory.

    :ivar bind_outcome: the state a bind leaves (``Bound``, ``BindFailed``,
        ``BindStarted``), or an HTTP status the PATCH answers without
        binding.
    :ivar changes: the (method, path and query) of every request that is
        not a GET: what reached Cyborg.
    """

    def __init__(self):
        self.arqs = {}
        self.profiles = {}
        self.bind_outcome = 'Bound'
        self.changes = []

    def add_profile(self, name, groups):
        self.profiles[name] = {'name': name, 'uuid': str(uuid.uuid4()),
                               'description': '', 'groups': groups}

    def add_arq(self, profile, project_id, group_id=0):
        """A new ARQ in state Initial, as ``POST`` makes one."""
        arq_uuid = str(uuid.uuid4())
        self.arqs[arq_uuid] = {
            'uuid': arq_uuid, 'state': 'Initial',
            'device_profile_name': profile,
            'device_profile_group_id': group_id, 'hostname': None,
            'device_rp_uuid': None, 'instance_uuid': None,
            'project_id': project_id, 'attach_handle_type': None,
            'attach_handle_uuid': None, 'attach_handle_info': {},
            'links': []}
        return arq_uuid

    @webob.dec.wsgify
    def __call__(self, req):
        if req.method != 'GET':
            self.changes.append((req.method, req.path_qs))
        path = req.path_info.rstrip('/')
        if req.method == 'GET' and path == PROFILES:
            names = req.GET.get('name', '').split(',')
            return webob.Response(json_body={'device_profiles': [
                p for n, p in self.profiles.items() if n in names]})
        if req.method == 'GET' and path.startswith(ARQS + '/'):
            arq = self.arqs.get(path[len(ARQS) + 1:])
            if arq is None:
                return _error(404, 'ARQ not found')
            return webob.Response(json_body=arq)
        if req.method == 'GET' and path == ARQS:
            instance = req.GET.get('instance')
            return webob.Response(json_body={'arqs': [
                a for a in self.arqs.values()
                if not instance or a['instance_uuid'] == instance]})
        if req.method == 'POST' and path == ARQS:
            return webob.Response(status=201, json_body={'arqs': []})
        if req.method == 'PATCH' and path == ARQS:
            return self._patch(req)
        if req.method == 'DELETE' and path == ARQS:
            return self._delete(req)
        return _error(404, 'The resource could not be found.')

    def _patch(self, req):
        try:
            patches = json.loads(req.body)
            for arq_uuid, patch in patches.items():
                ops = {p['op'] for p in patch}
                if len(ops) != 1 or not ops <= {'add', 'remove'}:
                    raise ValueError('Every op must be add or remove')
                fields = {p['path'].lstrip('/'): p.get('value')
                          for p in patch}
                if 'add' in ops and not set(_BIND_FIELDS) <= set(fields):
                    raise ValueError('Fields absent in patch')
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            return _error(400, 'Invalid patch: %s' % error)
        for arq_uuid in patches:
            if arq_uuid not in self.arqs:
                return _error(404, 'ARQ %s not found' % arq_uuid)
        if isinstance(self.bind_outcome, int):
            return _error(self.bind_outcome, 'Bind failed')
        for arq_uuid, patch in patches.items():
            arq = self.arqs[arq_uuid]
            if patch[0]['op'] == 'add':
                arq.update({p['path'].lstrip('/'): p['value'] for p in patch})
                arq['project_id'] = req.headers.get('X-Project-Id',
                                                    arq['project_id'])
                arq['state'] = self.bind_outcome
            else:
                arq.update(dict.fromkeys(_BIND_FIELDS), state='Unbound')
        return webob.Response(status=202)

    def _delete(self, req):
        arqs, instance = req.GET.get('arqs'), req.GET.get('instance')
        if bool(arqs) == bool(instance):
            return _error(400, 'Provide either an ARQ uuid list or an '
                               'instance UUID')
        if arqs:
            names = arqs.split(',')
            missing = [a for a in names if a not in self.arqs]
            if missing:
                return _error(404, 'ARQ %s not found' % missing[0])
        else:
            names = [a for a, arq in self.arqs.items()
                     if arq['instance_uuid'] == instance]
        for name in names:
            del self.arqs[name]
        return webob.Response(status=204)
