"""The keystone limit source: Keystone unified limits through oslo.limit.

oslo.limit provides the configuration (``[oslo_limit]``: credentials and
the endpoint whose limits apply), the connection, the endpoint lookup and
the registered and project limit reads. cyquota's models enforce: oslo.limit
2.12 cannot enforce strict_two_level (its ``Enforcer`` does not accept the
name Keystone reports, and its strict enforcer raises NotImplementedError),
so this source uses oslo.limit's limit reader, ``_EnforcerUtils``, directly.

Keystone's strict_two_level trees are a domain and its projects: a
top-level project's ``parent_id`` is its domain, and a domain's limits are
domain limits, which oslo.limit cannot read; they are listed through the
same connection.

Resource classes map to Keystone resource names by ``[quota]
keystone_resource_name_format`` (default ``class:{resource}``, as Nova
names the same accelerators). cyquota never writes Keystone's limits: the
write API answers ``LimitSourceReadOnly``.
"""

from keystoneauth1 import exceptions as ksa_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_limit import exception as limit_exceptions
from oslo_limit import limit as oslo_limit

from cyquota.conf import CONF
from cyquota import exception
from cyquota.quota.limits import source
from cyquota.quota import resources as quota_resources

#: Keystone's enforcement model names -> cyquota's.
MODEL_NAMES = {'flat': 'flat', 'strict_two_level': 'strict-two-level'}

# What a failing Keystone (or a failing lookup of the endpoint) raises.
_UNAVAILABLE = (ksa_exceptions.ClientException, sdk_exceptions.SDKException,
                limit_exceptions.SessionInitError, ValueError, KeyError)


class KeystoneLimitSource(source.LimitSource):
    """Limits and project parents read from Keystone.

    Keystone cannot tell cyquota of a change: in the shared limit cache,
    its entries are only bounded by ``[quota] limit_cache_ttl``.
    """

    name = 'keystone'

    def __init__(self):
        name_format = CONF.quota.keystone_resource_name_format
        if '{resource}' not in name_format:
            raise exception.Invalid(
                reason='[quota] keystone_resource_name_format %r must '
                       'contain {resource}' % name_format)
        self._name_format = name_format
        self._reader = None

    # -- talking to Keystone -----------------------------------------------

    def _call(self, func, *args, **kwargs):
        try:
            return func(*args, **kwargs)
        except _UNAVAILABLE as error:
            raise exception.LimitSourceUnavailable(source=self.name,
                                                   reason=str(error))

    @property
    def _limits(self):
        """oslo.limit's limit reader for ``[oslo_limit]``'s endpoint; made
        on first use, as it looks the endpoint up in Keystone."""
        if self._reader is None:
            self._reader = self._call(oslo_limit._EnforcerUtils, cache=False)
        return self._reader

    def _resource_names(self):
        """``{keystone resource name: resource class}``."""
        return {self._name_format.format(resource=r): r
                for r in quota_resources.known_resources()}

    def _by_resource(self, pairs):
        names = self._resource_names()
        return {names[name]: limit for name, limit in pairs if name in names}

    def _domain_limits(self, domain_id):
        limits = self._limits
        params = {'domain_id': domain_id, 'service_id': limits._service_id}
        if limits._region_id is not None:
            params['region_id'] = limits._region_id
        response = limits.connection.get('/limits', params=params)
        sdk_exceptions.raise_from_response(response)
        return [(item['resource_name'], item['resource_limit'])
                for item in response.json()['limits']]

    def _load(self, key):
        """Read one cache entry's value from Keystone."""
        kind, _, ident = key.partition(':')
        if kind == 'registered':
            return self._by_resource(
                self._limits.get_registered_limits(None))
        if kind == 'limits':
            return self._by_resource(
                self._limits.get_project_limits(ident, None))
        try:
            project = self._limits.connection.get_project(ident)
        except sdk_exceptions.NotFoundException:
            raise exception.UnknownProject(
                project_id=ident, reason='Keystone has no such project')
        if project.is_domain:
            own = self._domain_limits(ident)
        else:
            own = self._limits.get_project_limits(ident, None)
        return {'parent_id': project.parent_id,
                'own': self._by_resource(own)}

    def _fetch(self, keys):
        """``{key: value}``: ``registered``, ``limits:<project>`` (own
        limits), ``project:<id>`` (``{parent_id, own}``, for a domain its
        domain limits)."""
        return {key: self._call(self._load, key) for key in keys}

    # -- the hook interface ------------------------------------------------

    def model_name(self):
        name = self._call(
            lambda: self._limits.connection.get('/limits/model')
            .json()['model']['name'])
        return MODEL_NAMES.get(name, name)

    @property
    def unregistered_limit(self):
        strategy = CONF.quota.unregistered_resource_strategy
        return 0 if strategy == 'require' else -1

    def get_registered_limits(self, context, resources):
        return _pick(self._fetch(['registered'])['registered'], resources)

    def get_project_limits(self, context, project_id, resources):
        key = 'limits:' + project_id
        return _pick(self._fetch([key])[key], resources)

    def get_limits(self, context, project_id, resources):
        key = 'limits:' + project_id
        values = self._fetch(['registered', key])
        return (_pick(values['registered'], resources),
                _pick(values[key], resources))

    def get_parent(self, context, project_id):
        key = 'project:' + project_id
        return self._fetch([key])[key]['parent_id']

    def project_names(self, context, project_id):
        """``{"<project name>@<domain name>"}`` as Keystone names them."""
        def names():
            connection = self._limits.connection
            project = connection.get_project(project_id)
            domain = connection.get_domain(project.domain_id)
            return {'%s@%s' % (project.name, domain.name)}
        return self._call(names)

    def get_children(self, context, project_id):
        return self._call(lambda: [
            project.id for project in
            self._limits.connection.projects(parent_id=project_id)])

    def get_tree_limits(self, context, project_id, resources,
                        register=False):
        key = 'project:' + project_id
        values = self._fetch(['registered', key])
        parent_id = values[key]['parent_id']
        grandparent_id, parent_own = None, {}
        if parent_id is not None:
            parent = self._fetch(['project:' + parent_id])[
                'project:' + parent_id]
            grandparent_id, parent_own = parent['parent_id'], parent['own']
        return source.TreeLimits(
            project_id, parent_id, grandparent_id,
            _pick(values['registered'], resources),
            _pick(values[key]['own'], resources),
            _pick(parent_own, resources))


def _pick(limits, resources):
    return {r: limits[r] for r in resources if r in limits}
