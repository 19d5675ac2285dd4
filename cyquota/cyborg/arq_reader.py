"""Cyborg's accelerator requests (ARQs) and device profiles, read through
Cyborg's public REST API, and what an ARQ's state means for the
reservation of its bind.

Used in two processes: by the filter in Cyborg's API and by cyquota's
conductor, which resolves binds that finished asynchronously. Both pass a
keystoneauth adapter whose endpoint is Cyborg's versioned one
(``.../v2``); paths here are relative to it, as Nova's Cyborg client's are.
"""

import urllib.parse

from keystoneauth1 import exceptions as ks_exceptions

#: ARQ states (Cyborg's ``common/constants.py``).
INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'

#: What a reservation of an ARQ's bind becomes.
COMMIT = 'commit'
ROLLBACK = 'rollback'
WAIT = 'wait'

#: The prefix of the reservation request ids of binds.
REQUEST_PREFIX = 'arq-'

#: A group's resource keys in a device profile (``resources:FPGA``).
_RESOURCE_KEY = 'resources:'


class CyborgUnavailable(Exception):
    """Cyborg could not be read (unreachable, timed out, an answer other
    than the ARQ or its absence); the message is one line."""


def request_id(arq_uuid):
    """The reservation request id of the bind of ``arq_uuid``: a retried
    bind reserves nothing twice."""
    return REQUEST_PREFIX + arq_uuid


def arq_of_request(request_id_value):
    """The ARQ uuid of a bind's request id; None for another request."""
    if request_id_value and request_id_value.startswith(REQUEST_PREFIX):
        return request_id_value[len(REQUEST_PREFIX):]
    return None


def outcome(arq):
    """What the reservation of ``arq``'s bind becomes (``arq`` None: gone).

    Bound commits; a bind under way (BindStarted, or Initial while the
    PATCH that binds it is still being answered) waits, and the
    reservation's expiry rolls it back if it never ends; anything else
    (BindFailed, Unbound, Deleting, gone) rolls back.
    """
    state = arq and arq.get('state')
    if state == BOUND:
        return COMMIT
    if state in (BIND_STARTED, INITIAL):
        return WAIT
    return ROLLBACK


def group_classes(profile, group_id):
    """The resource classes that the group ``group_id`` of a device
    profile (its REST representation) requests, sorted; empty when the
    profile has no such group."""
    groups = profile.get('groups') or []
    if not isinstance(group_id, int) or not 0 <= group_id < len(groups):
        return []
    group = groups[group_id] or {}
    return sorted(key[len(_RESOURCE_KEY):] for key in group
                  if key.startswith(_RESOURCE_KEY))


def _quoted(value):
    return urllib.parse.quote(str(value), safe='')


class ArqReader:
    """Reads of one Cyborg API.

    :param adapter: a keystoneauth ``Adapter`` of Cyborg's endpoint.
    """

    def __init__(self, adapter):
        self._adapter = adapter

    def _get(self, path, **kwargs):
        """The answer to a GET of ``path``; 404 is an answer."""
        try:
            response = self._adapter.get(
                path, raise_exc=False,
                headers={'Accept': 'application/json'}, **kwargs)
        except ks_exceptions.ClientException as error:
            raise CyborgUnavailable('GET %s: %s' % (path, _one_line(error)))
        if response.status_code != 404 and response.status_code != 200:
            raise CyborgUnavailable('GET %s answered %d' % (
                path, response.status_code))
        return response

    def _json(self, path, response):
        try:
            return response.json()
        except ValueError:
            raise CyborgUnavailable('GET %s answered no JSON' % path)

    def get_arq(self, arq_uuid):
        """The ARQ's representation (``uuid``, ``state``,
        ``device_profile_name``, ``device_profile_group_id``,
        ``instance_uuid``, ``project_id``, ...); None when Cyborg has no
        such ARQ."""
        path = '/accelerator_requests/%s' % _quoted(arq_uuid)
        response = self._get(path)
        if response.status_code == 404:
            return None
        return self._json(path, response)

    def arqs_of_instance(self, instance_uuid):
        """The ARQs bound or being bound to ``instance_uuid``."""
        path = '/accelerator_requests'
        response = self._get(path, params={'instance': instance_uuid})
        if response.status_code == 404:
            return []
        return self._json(path, response).get('arqs') or []

    def device_profile(self, name):
        """The device profile named ``name`` (``groups`` and the rest);
        None when there is none such."""
        path = '/device_profiles'
        response = self._get(path, params={'name': name})
        if response.status_code == 404:
            return None
        profiles = self._json(path, response).get('device_profiles') or []
        return profiles[0] if len(profiles) == 1 else None


def _one_line(error):
    return ('%s: %s' % (type(error).__name__, error)).splitlines()[0]
