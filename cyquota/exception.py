"""cyquota's exceptions.

Every error a caller can cause is a ``CyquotaException`` with an HTTP status
(``code``), a stable error kind (``kind``, the REST ``cyquota.<kind>`` code)
and keyword details (``kwargs``). The constructor takes ``(message=None,
**kwargs)`` so that oslo.messaging can rebuild the same class, message and
details on the RPC client side.
"""


class CyquotaException(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword details."""

    msg_fmt = 'An unknown error occurred.'
    code = 500
    kind = 'internal_error'
    title = 'Internal Server Error'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            message = self.msg_fmt % kwargs
        self.message = message
        super().__init__(message)


class Invalid(CyquotaException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400
    kind = 'invalid'
    title = 'Bad Request'


class UnknownResource(Invalid):
    msg_fmt = ("Unknown resource '%(resource)s'; known resources: "
               "%(known)s.")
    kind = 'unknown_resource'


class InvalidDelta(Invalid):
    msg_fmt = "Invalid delta for resource '%(resource)s': %(reason)s"
    kind = 'invalid_delta'


class InvalidExpire(Invalid):
    msg_fmt = "Invalid expire '%(expire)s': %(reason)s"
    kind = 'invalid_expire'


class InvalidProjectId(Invalid):
    msg_fmt = "Invalid project id '%(project_id)s': %(reason)s"
    kind = 'invalid_project_id'


class InvalidLimit(Invalid):
    msg_fmt = "Invalid limit for resource '%(resource)s': %(reason)s"
    kind = 'invalid_limit'


class InvalidReservationList(Invalid):
    msg_fmt = 'Invalid reservation list: %(reason)s'
    kind = 'invalid_reservations'


class InvalidAllocation(Invalid):
    msg_fmt = 'Invalid allocation report of host %(host)r: %(reason)s'
    kind = 'invalid_allocation'


class NotFound(CyquotaException):
    msg_fmt = 'Not found: %(reason)s'
    code = 404
    kind = 'not_found'
    title = 'Not Found'


class ReservationNotFound(NotFound):
    msg_fmt = ("Reservation(s) %(uuids)s not found for project "
               "%(project_id)s.")
    kind = 'reservation_not_found'


class Conflict(CyquotaException):
    msg_fmt = 'Conflict: %(reason)s'
    code = 409
    kind = 'conflict'
    title = 'Conflict'


class ReservationConflict(Conflict):
    msg_fmt = ('Cannot %(action)s reservation %(uuid)s: it is already '
               '%(status)s.')
    kind = 'reservation_conflict'


class RequestIdConflict(Conflict):
    msg_fmt = ("request_id '%(request_id)s' was already used by project "
               "%(project_id)s with other deltas (%(existing)s).")
    kind = 'request_id_conflict'


class OverQuota(CyquotaException):
    """The request would take a project (or its tree) over a limit.

    ``overs`` lists every blocked (project, resource, scope) with ``limit``,
    ``used``, ``reserved`` and ``requested``.
    """

    msg_fmt = 'Quota exceeded: %(summary)s'
    code = 403
    kind = 'over_quota'
    title = 'Forbidden'

    def __init__(self, message=None, overs=(), **kwargs):
        overs = [dict(o) for o in overs]
        kwargs.setdefault('summary', '; '.join(
            "%(scope)s %(project_id)s over limit for %(resource)s "
            "(limit %(limit)s, used %(used)s, reserved %(reserved)s, "
            "requested %(requested)s)" % o for o in overs))
        super().__init__(message, overs=overs, **kwargs)
        self.overs = overs
