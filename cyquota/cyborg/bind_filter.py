"""cyquota's WSGI filter in Cyborg's API pipeline (SPEC 3.7).

In ``api-paste.ini``, after ``authtoken``::

    [filter:cyquota_bind]
    paste.filter_factory = cyquota.cyborg.bind_filter:filter_factory

A bind (``PATCH /v2/accelerator_requests`` adding an instance to ARQs)
reserves, per ARQ, one unit of the resource of its device profile group
(Placement class through ``class_map``) for the bind's project, with
consumer = the instance and request id ``arq-<ARQ uuid>``; a quota refusal
answers 403 and Cyborg sees nothing. After Cyborg's answer each
reservation follows its ARQ's state (``arq_reader.outcome``): Bound
commits, BindFailed or an error answer rolls back, BindStarted is left to
cyquota's conductor. An unbind (patches removing the fields) or a
``DELETE ?arqs=`` / ``?instance=`` releases, once Cyborg has answered 2xx,
what the ARQs it names held while Bound. Everything else, and any body
Cyborg would refuse, passes through untouched.

The bind's project is the one Cyborg stores on the ARQ: a ``/project_id``
an admin adds in the patch, else the caller's (``X-Project-Id`` from
authtoken: Nova binds with the user's token beside its service token, so it
is the instance's project), else the ARQ's own ``project_id``.
"""

import collections
import dataclasses
import json

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
import webob
import webob.dec

from cyquota.cyborg import arq_reader
from cyquota.cyborg import bind_patch
from cyquota.cyborg import filter_opts
from cyquota.cyborg import quota_client
from cyquota import resource_classes

LOG = logging.getLogger(__name__)

#: The collection of ARQs in Cyborg's API, as the filter sees the path.
ARQS_PATH = '/v2/accelerator_requests'


@dataclasses.dataclass
class Unit:
    """One ARQ's unit of a cyquota resource, held by ``instance_uuid`` of
    ``project_id``."""

    arq_uuid: str
    project_id: str
    resource: str
    instance_uuid: str


def _cyborg_error(status, detail):
    """An error answer shaped as Cyborg's (``ParsableErrorMiddleware``
    around a wsme fault), so that its clients read it as Cyborg's own."""
    fault = {'faultcode': 'Client' if status < 500 else 'Server',
             'faultstring': detail, 'debuginfo': None}
    return webob.Response(status=status, json_body={
        'error_message': json.dumps(fault)})


class BindFilter:
    """The filter around Cyborg's API application.

    :param app: the next WSGI application of the pipeline.
    :param conf: the host service's configuration (``cfg.CONF``), on
        which ``[cyquota_filter]`` is registered.
    :param local_conf: the paste section's values, overriding ``conf``'s.
    :raises ValueError: a ``class_map`` that does not parse.
    """

    def __init__(self, app, conf, local_conf=None):
        self._app = app
        filter_opts.register_opts(conf)
        filter_opts.apply_local_conf(conf, local_conf or {})
        options = conf[filter_opts.GROUP]
        self._fail_open = options.fail_open
        self._expire = options.reservation_expire
        self._classes = resource_classes.ClassMap(options.class_map)
        auth = ks_loading.load_auth_from_conf_options(conf,
                                                      filter_opts.GROUP)
        session = ks_loading.load_session_from_conf_options(
            conf, filter_opts.GROUP, auth=auth)
        self._quota = quota_client.QuotaClient(
            ks_loading.load_adapter_from_conf_options(
                conf, filter_opts.GROUP, session=session, auth=auth))
        self._cyborg = arq_reader.ArqReader(ks_adapter.Adapter(
            session, auth=auth, service_type=options.cyborg_service_type,
            interface=options.valid_interfaces,
            region_name=options.region_name,
            endpoint_override=options.cyborg_endpoint_override))

    @webob.dec.wsgify
    def __call__(self, req):
        if req.path_info.rstrip('/') != ARQS_PATH:
            return self._app
        if req.method == 'PATCH':
            return self._patch(req)
        if req.method == 'DELETE':
            return self._delete(req)
        return self._app

    # Which units ARQs are.

    def _unit(self, arq, project_id, instance_uuid, profiles):
        """The :class:`Unit` of ``arq``; None when it counts as no cyquota
        resource (or Cyborg has no such ARQ or profile)."""
        if arq is None or not project_id:
            return None
        name = arq.get('device_profile_name')
        if name not in profiles:
            profiles[name] = self._cyborg.device_profile(name)
        if profiles[name] is None:
            LOG.warning('The filter cannot read device profile %r in '
                        'Cyborg: accelerator request %s is not counted',
                        name, arq['uuid'])
            return None
        resources = [self._classes.to_cyquota(rc) for rc in
                     arq_reader.group_classes(
                         profiles[name], arq.get('device_profile_group_id'))]
        resources = [resource for resource in resources if resource]
        if not resources:
            return None
        # Cyborg makes one ARQ per unit of a group without saying which of
        # the group's classes it stands for; groups of accelerators name
        # one class.
        return Unit(arq['uuid'], project_id, resources[0], instance_uuid)

    def _bind_units(self, req, binds):
        """The units that the binds of ``binds`` (``{arq_uuid: Bind}``)
        reserve.

        :raises arq_reader.CyborgUnavailable:
        """
        profiles, units = {}, []
        for arq_uuid, bind in binds.items():
            arq = self._cyborg.get_arq(arq_uuid)
            if arq is None:
                # Cyborg refuses the bind of an ARQ it does not have; one
                # it binds is one the filter's user may not read (it needs
                # Cyborg's admin role).
                LOG.warning('The filter cannot read accelerator request %s '
                            'in Cyborg: its bind is not counted', arq_uuid)
            project_id = (bind.project_id or req.headers.get('X-Project-Id')
                          or (arq or {}).get('project_id'))
            unit = self._unit(arq, project_id, bind.instance_uuid, profiles)
            if unit is not None:
                units.append(unit)
        return units

    def _bound_units(self, req, arqs):
        """The units that the Bound ones of ``arqs`` hold."""
        profiles = {}
        units = (self._unit(arq, arq.get('project_id')
                            or req.headers.get('X-Project-Id'),
                            arq.get('instance_uuid'), profiles)
                 for arq in arqs
                 if arq and arq.get('state') == arq_reader.BOUND
                 and arq.get('instance_uuid'))
        return [unit for unit in units if unit is not None]

    # The requests.

    def _patch(self, req):
        try:
            request = bind_patch.parse(json.loads(req.body))
        except ValueError:
            request = None
        if request is None:
            return self._app
        reserved = []
        if request.binds:
            try:
                reserved = self._reserve(req, request.binds)
            except quota_client.Refused as refusal:
                return _cyborg_error(403, str(refusal))
            except (quota_client.Unavailable,
                    arq_reader.CyborgUnavailable) as error:
                if not self._fail_open:
                    LOG.error('Refused a bind of accelerator requests with '
                              '503 (fail_open = false): cannot count it: '
                              '%s', error)
                    return _cyborg_error(
                        503, 'The accelerator quota service cannot count '
                             'this bind; try again later.')
                LOG.warning('Forwarding a bind of accelerator requests '
                            'uncounted (fail_open = true): cannot count '
                            'it: %s', error)
        freed = self._read_bound(req, request.unbinds, self._cyborg.get_arq)
        response = req.get_response(self._app)
        self._settle(reserved, response.status_int < 400)
        self._release(freed, response)
        return response

    def _delete(self, req):
        arqs = req.GET.get('arqs')
        instance_uuid = req.GET.get('instance')
        if bool(arqs) == bool(instance_uuid):
            return self._app
        if arqs:
            freed = self._read_bound(req, arqs.split(','),
                                     self._cyborg.get_arq)
        else:
            freed = self._read_bound(req, [instance_uuid],
                                     self._cyborg.arqs_of_instance)
        response = req.get_response(self._app)
        self._release(freed, response)
        return response

    # The reservations.

    def _reserve(self, req, binds):
        """Reserve the units of ``binds``; returns ``[(Unit,
        reservation uuids)]``. On any failure what was reserved is rolled
        back before the error is raised."""
        reserved = []
        try:
            for unit in self._bind_units(req, binds):
                try:
                    reserved.append((unit, self._quota.reserve(
                        unit.project_id, unit.resource, unit.instance_uuid,
                        arq_reader.request_id(unit.arq_uuid), self._expire)))
                except quota_client.NotCounted:
                    LOG.debug('%s is not counted by cyquota: the bind of '
                              'accelerator request %s is not reserved',
                              unit.resource, unit.arq_uuid)
        except quota_client.Refused as refusal:
            LOG.info('Refused the bind of accelerator request %s to '
                     'instance %s (project %s, %s): %s', unit.arq_uuid,
                     unit.instance_uuid, unit.project_id, unit.resource,
                     refusal)
            self._finish(reserved, arq_reader.ROLLBACK)
            raise
        except quota_client.Unavailable:
            self._finish(reserved, arq_reader.ROLLBACK)
            raise
        return reserved

    def _finish(self, reserved, decision):
        """Commit or roll back each of ``reserved``; one that cyquota does
        not take is left to its expiry (or its conductor) and logged."""
        for unit, uuids in reserved:
            finish = (self._quota.commit if decision == arq_reader.COMMIT
                      else self._quota.rollback)
            try:
                finish(unit.project_id, uuids)
            except quota_client.Unavailable as error:
                LOG.error('Could not %s the reservation of the bind of '
                          'accelerator request %s: %s', decision,
                          unit.arq_uuid, error)

    def _settle(self, reserved, answered_ok):
        """Commit or roll back each reservation as its ARQ's state says
        after Cyborg answered; an error answer rolls back all but a Bound
        ARQ."""
        for unit, uuids in reserved:
            try:
                arq = self._cyborg.get_arq(unit.arq_uuid)
            except arq_reader.CyborgUnavailable as error:
                LOG.warning('Cannot read accelerator request %s after its '
                            'bind: %s', unit.arq_uuid, error)
                if answered_ok:
                    continue  # cyquota's conductor resolves it.
                arq = None
            decision = arq_reader.outcome(arq)
            if not answered_ok and decision == arq_reader.WAIT:
                decision = arq_reader.ROLLBACK
            if decision != arq_reader.WAIT:
                self._finish([(unit, uuids)], decision)

    def _read_bound(self, req, keys, read):
        """The units held by the Bound ARQs that ``read`` finds for
        ``keys`` (ARQ uuids or an instance), read before Cyborg unbinds or
        deletes them; none when Cyborg cannot be read (logged)."""
        arqs = []
        try:
            for key in keys:
                found = read(key)
                arqs.extend(found if isinstance(found, list) else [found])
            return self._bound_units(req, arqs)
        except arq_reader.CyborgUnavailable as error:
            LOG.error('Cannot read the accelerator requests of an unbind '
                      'or delete; their quota is not released: %s', error)
            return []

    def _release(self, units, response):
        """Release ``units`` once Cyborg answered 2xx, one call per
        project and instance."""
        if not units or response.status_int >= 300:
            return
        held = collections.defaultdict(collections.Counter)
        for unit in units:
            held[(unit.project_id, unit.instance_uuid)][unit.resource] += 1
        for (project_id, instance_uuid), deltas in sorted(held.items()):
            try:
                self._quota.release(project_id, dict(deltas), instance_uuid)
            except quota_client.NotCounted:
                pass  # Nothing was reserved at its bind either.
            except quota_client.Unavailable as error:
                LOG.error('Could not release %s of instance %s (project '
                          '%s) after Cyborg freed its accelerator '
                          'requests: %s', dict(deltas), instance_uuid,
                          project_id, error)


def filter_factory(global_conf, **local_conf):
    """The paste filter factory: the filter on the host service's global
    configuration, with the paste section's values over it."""

    def _filter(app):
        return BindFilter(app, cfg.CONF, local_conf)

    return _filter
