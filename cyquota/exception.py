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


class InvalidParent(Invalid):
    msg_fmt = ("Invalid parent_id %(parent_id)r of project %(project_id)s: "
               "%(reason)s")
    kind = 'invalid_parent'


class UnknownProject(Invalid):
    msg_fmt = "Unknown project '%(project_id)s': %(reason)s"
    kind = 'unknown_project'


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


class ProjectNotFound(NotFound):
    msg_fmt = "Project %(project_id)s is not registered in the limit store."
    kind = 'project_not_found'


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


class HierarchyTooDeep(Conflict):
    msg_fmt = ("Project %(project_id)s cannot be a child of %(parent_id)s: "
               "%(parent_id)s is itself a child of %(grandparent_id)s, and "
               "strict-two-level trees are a root and its children only.")
    kind = 'hierarchy_too_deep'


class ProjectParentConflict(Conflict):
    msg_fmt = ("Project %(project_id)s cannot take parent %(parent_id)s: "
               "%(reason)s")
    kind = 'project_parent_conflict'


class LimitHierarchyConflict(Conflict):
    msg_fmt = ("Limit %(limit)s of %(resource)s for project %(project_id)s "
               "breaks the strict-two-level tree: %(reason)s")
    kind = 'limit_hierarchy_conflict'


class LimitSourceReadOnly(Conflict):
    msg_fmt = ("Limits are read from %(source)s; change them there "
               "(cyquota's limit API is read-only with this source).")
    kind = 'limit_source_read_only'


class LimitSourceUnavailable(CyquotaException):
    msg_fmt = 'The limit source %(source)s cannot be read: %(reason)s'
    code = 503
    kind = 'limit_source_unavailable'
    title = 'Service Unavailable'


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
