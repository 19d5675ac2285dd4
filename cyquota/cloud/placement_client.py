"""A client of the cloud's Placement API.

It reaches Placement as Nova does: a keystoneauth session, auth plugin and
adapter loaded from the ``[placement]`` options (``auth_type`` and the
plugin's own options, ``region_name``, ``valid_interfaces``,
``endpoint_override``, ``timeout``, ...). On first use it negotiates the
microversion: the highest that both Placement and cyquota know, at most
:data:`MAX_MICROVERSION`, at least :data:`MIN_MICROVERSION` (consumer types
in allocations and usages grouped by consumer type).

Reads return Placement's JSON bodies as they are (documented per method);
failures raise the errors of :mod:`cyquota.cloud.placement_errors`.
Placement offers no paging: a list is one request.
"""

import time
import urllib.parse

from keystoneauth1 import discover
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading

from cyquota.cloud import placement_errors as errors
from cyquota.conf import CONF
from cyquota import redaction

#: The least microversion cyquota works with: 1.38 adds ``consumer_type``
#: to allocations and groups ``GET /usages`` by consumer type.
MIN_MICROVERSION = (1, 38)
#: The highest microversion cyquota knows.
MAX_MICROVERSION = (1, 39)
#: How many times an allocation write is tried when a generation changed
#: under it (Placement's 409 ``placement.concurrent_update``).
WRITE_ATTEMPTS = 4
#: Seconds between two such tries, times the try's number.
RETRY_DELAY = 0.1

#: The consumer type of a lease's allocations in Placement (a lease is
#: not one of Placement's own ``INSTANCE`` or ``MIGRATION``).
LEASE_CONSUMER_TYPE = 'CYQUOTA_LEASE'

GROUP = 'placement'


def load_adapter(conf):
    """The keystoneauth adapter of ``conf``'s ``[placement]`` options.

    :raises keystoneauth1.exceptions.ClientException: the auth plugin
        cannot be loaded (no such plugin, a required option unset).
    :raises TypeError: adapter options that contradict each other.
    """
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(conf, GROUP,
                                                     session=session,
                                                     auth=auth)


def _quoted(value):
    return urllib.parse.quote(str(value), safe='')


def _why(error):
    """A keystoneauth error on one line, URL passwords masked."""
    return errors.one_line(redaction.mask_url(
        '%s: %s' % (type(error).__name__, error)))


class PlacementClient:
    """Calls to one Placement endpoint.

    :param conf: the configuration whose ``[placement]`` options say how to
        reach Placement (cyquota's ``CONF`` when None).
    """

    def __init__(self, conf=None):
        self._adapter = load_adapter(CONF if conf is None else conf)
        self._microversion = None

    @property
    def microversion(self):
        """The negotiated microversion, as ``'1.39'``; asks Placement's
        version document the first time.

        :raises PlacementUnreachable: no answer.
        :raises PlacementUnsupported: Placement serves no microversion from
            :data:`MIN_MICROVERSION` on.
        """
        if self._microversion is None:
            self._microversion = self._negotiate()
        return self._microversion

    def _negotiate(self):
        try:
            data = self._adapter.get_endpoint_data()
            if data is not None and data.max_microversion is None:
                # With an auth plugin that has a catalog, keystoneauth
                # answers a discovery that got no answer with an endpoint
                # that has no versions instead of raising: ask the
                # endpoint itself, so that silence raises here too.
                self._adapter.session.get(data.url, authenticated=False,
                                          raise_exc=False)
        except ks_exceptions.ClientException as error:
            raise errors.PlacementUnreachable(
                'Placement version discovery failed: %s' % _why(error))
        if data is None:
            raise errors.PlacementUnreachable(
                'Placement version discovery failed: no endpoint of service '
                'type %s found' % self._adapter.service_type)
        served = data.max_microversion
        if not served or served < MIN_MICROVERSION:
            raise errors.PlacementUnsupported(
                'Placement serves microversions up to %s; cyquota needs %s '
                'or later' % (discover.version_to_string(served)
                              if served else 'none',
                              discover.version_to_string(MIN_MICROVERSION)))
        return discover.version_to_string(min(served, MAX_MICROVERSION))

    def _request(self, method, path, body=None, ok=(200,)):
        """``method path`` at the negotiated microversion; the decoded body
        (None when empty) of an answer whose status is in ``ok``."""
        microversion = self.microversion
        try:
            response = self._adapter.request(
                path, method, json=body, microversion=microversion,
                raise_exc=False)
        except ks_exceptions.ClientException as error:
            raise errors.PlacementUnreachable(
                'Placement %s %s: %s' % (method, path, _why(error)))
        try:
            decoded = response.json() if response.content else None
        except ValueError:
            decoded = None
        if response.status_code not in ok:
            raise errors.http_error(method, path, response.status_code,
                                    decoded)
        return decoded

    def _get(self, path):
        return self._request('GET', path)

    # Resource providers.

    def resource_providers(self):
        """Every resource provider: a list of ``{"uuid", "name",
        "generation", "parent_provider_uuid", "root_provider_uuid",
        "links"}``."""
        return self._get('/resource_providers')['resource_providers']

    def _provider(self, uuid, what):
        return self._get('/resource_providers/%s/%s' % (_quoted(uuid), what))

    def inventories(self, uuid):
        """A provider's inventories: ``{"inventories": {class: {"total",
        "reserved", "min_unit", "max_unit", "step_size",
        "allocation_ratio"}}, "resource_provider_generation"}``."""
        return self._provider(uuid, 'inventories')

    def aggregates(self, uuid):
        """A provider's aggregates: ``{"aggregates": [uuid, ...],
        "resource_provider_generation"}``."""
        return self._provider(uuid, 'aggregates')

    def traits(self, uuid):
        """A provider's traits: ``{"traits": [name, ...],
        "resource_provider_generation"}``."""
        return self._provider(uuid, 'traits')

    def provider_usages(self, uuid):
        """What all consumers use of a provider: ``{"usages": {class:
        amount}, "resource_provider_generation"}``."""
        return self._provider(uuid, 'usages')

    def provider_allocations(self, uuid):
        """The allocations against a provider: ``{"allocations":
        {consumer: {"resources": {class: amount}, "consumer_generation"}},
        "resource_provider_generation"}``."""
        return self._provider(uuid, 'allocations')

    # Allocations of a consumer.

    def consumer_allocations(self, consumer):
        """A consumer's allocations: ``{"allocations": {provider:
        {"resources": {class: amount}, "generation"}},
        "consumer_generation", "project_id", "user_id",
        "consumer_type"}``; ``{"allocations": {}}`` for a consumer
        Placement does not know."""
        return self._get('/allocations/%s' % _quoted(consumer))

    def put_allocations(self, consumer, allocations, project_id, user_id,
                        consumer_type, consumer_generation):
        """Make ``allocations`` (``{provider: {class: amount}}``) all that
        ``consumer`` holds, if its generation is still
        ``consumer_generation`` (None: a consumer Placement does not know
        yet).

        :raises GenerationConflict: the consumer's generation changed.
        :raises PlacementConflict: not enough capacity left.
        """
        body = {
            'allocations': {
                provider: {'resources': dict(resources)}
                for provider, resources in allocations.items()},
            'consumer_generation': consumer_generation,
            'project_id': project_id,
            'user_id': user_id,
            'consumer_type': consumer_type,
        }
        self._request('PUT', '/allocations/%s' % _quoted(consumer), body,
                      ok=(204,))

    def replace_allocations(self, consumer, allocations, project_id,
                            user_id, consumer_type):
        """:meth:`put_allocations` at the consumer's current generation,
        read again and tried again (up to :data:`WRITE_ATTEMPTS` times)
        when another writer changes the consumer or its providers
        meanwhile.

        :raises GenerationConflict: still changing after the last try.
        :raises PlacementConflict: not enough capacity left.
        """
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            generation = self.consumer_allocations(consumer).get(
                'consumer_generation')
            try:
                return self.put_allocations(
                    consumer, allocations, project_id, user_id,
                    consumer_type, generation)
            except errors.GenerationConflict:
                if attempt == WRITE_ATTEMPTS:
                    raise
                time.sleep(RETRY_DELAY * attempt)

    def delete_allocations(self, consumer):
        """Remove every allocation of ``consumer``; False when it had
        none."""
        try:
            self._request('DELETE', '/allocations/%s' % _quoted(consumer),
                          ok=(204,))
        except errors.PlacementNotFound:
            return False
        return True

    # Usages of a project.

    def project_usages(self, project_id, user_id=None):
        """What a project's (and, with ``user_id``, that user's) consumers
        use, grouped by consumer type: ``{consumer_type: {"consumer_count":
        n, class: amount}}``."""
        query = {'project_id': project_id}
        if user_id is not None:
            query['user_id'] = user_id
        return self._get('/usages?' + urllib.parse.urlencode(query))['usages']
