"""cyquota's reservation REST API, reached as a service from Cyborg's API
process (SPEC 4.1): reserve, commit, roll back, release.

A quota refusal (403 with a cyquota code other than ``cyquota.forbidden``:
over quota, budget exhausted, an enforcement denial) is
:class:`Refused`; any other failure to count (no connection, a timeout, a
5xx, a policy refusal of the filter's own user, an unexpected answer) is
:class:`Unavailable`, for ``fail_open`` to decide. A resource cyquota does
not count (400 ``cyquota.unknown_resource``) is :class:`NotCounted`: not
cyquota's business.
"""

from keystoneauth1 import exceptions as ks_exceptions

#: The code of a policy refusal: the filter's user lacks a role, which is
#: not the project's quota speaking.
_FORBIDDEN = 'cyquota.forbidden'
_UNKNOWN_RESOURCE = 'cyquota.unknown_resource'
#: The API microversion the calls speak, whatever cyquota's default: the
#: release is 1.6's. Named for the service whatever service type the
#: adapter's options give.
API_VERSION = '1.6'
_SERVICE_TYPE = 'accelerator-quota'


class Unavailable(Exception):
    """cyquota could not count; the message is one line."""


class NotCounted(Exception):
    """cyquota does not count the resource."""


class Refused(Exception):
    """cyquota refused the reservation.

    :ivar error: the first entry of cyquota's ``errors`` (``code``,
        ``detail``, and ``overs`` when over quota).
    """

    def __init__(self, error):
        super().__init__(error.get('detail') or error.get('code'))
        self.error = error


def _first_error(response):
    try:
        errors = response.json().get('errors') or [{}]
        return errors[0] if isinstance(errors[0], dict) else {}
    except (ValueError, AttributeError):
        return {}


class QuotaClient:
    """Calls to cyquota's ``/v1/reservations``.

    :param adapter: a keystoneauth ``Adapter`` of cyquota's endpoint.
    """

    def __init__(self, adapter):
        self._adapter = adapter

    def _post(self, path, body, expected):
        try:
            response = self._adapter.post(
                path, json=body, raise_exc=False, microversion=API_VERSION,
                microversion_service_type=_SERVICE_TYPE)
        except ks_exceptions.ClientException as error:
            raise Unavailable('POST %s: %s' % (path, (
                '%s: %s' % (type(error).__name__, error)).splitlines()[0]))
        if response.status_code == expected:
            return response
        error = _first_error(response)
        if response.status_code == 403 and error.get('code') not in (
                None, _FORBIDDEN):
            raise Refused(error)
        if response.status_code == 400 and error.get('code') == (
                _UNKNOWN_RESOURCE):
            raise NotCounted(error.get('detail'))
        raise Unavailable('POST %s answered %d %s' % (
            path, response.status_code, error.get('code', '')))

    def reserve(self, project_id, resource, consumer_id, request_id, expire):
        """Reserve one unit of ``resource``; returns the reservation uuids
        (a retry with the same ``request_id`` returns the first's).

        :raises Refused: over quota (or another quota refusal).
        :raises NotCounted: cyquota does not count ``resource``.
        :raises Unavailable: anything else but a reservation.
        """
        response = self._post('/v1/reservations', {
            'project_id': project_id, 'deltas': {resource: 1},
            'expire': expire, 'request_id': request_id,
            'consumer_id': consumer_id}, 201)
        try:
            return response.json()['reservations']
        except (ValueError, KeyError, TypeError):
            raise Unavailable('POST /v1/reservations answered 201 without '
                              'reservations')

    def commit(self, project_id, reservations):
        """Commit ``reservations`` (Unavailable when not answered 204)."""
        self._post('/v1/reservations/commit', {
            'project_id': project_id, 'reservations': reservations}, 204)

    def rollback(self, project_id, reservations):
        """Roll back ``reservations`` (Unavailable when not answered
        204)."""
        self._post('/v1/reservations/rollback', {
            'project_id': project_id, 'reservations': reservations}, 204)

    def release(self, project_id, deltas, consumer_id):
        """Take ``deltas`` off what ``consumer_id`` of ``project_id``
        holds (Unavailable when not answered 204)."""
        self._post('/v1/reservations/release', {
            'project_id': project_id, 'deltas': deltas,
            'consumer_id': consumer_id}, 204)
