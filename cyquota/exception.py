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


class InvalidLease(Invalid):
    msg_fmt = 'Invalid lease: %(field)s: %(reason)s'
    kind = 'invalid_lease'


class InvalidBudget(Invalid):
    msg_fmt = "Invalid budget: '%(field)s': %(reason)s"
    kind = 'invalid_budget'


class NotFound(CyquotaException):
    msg_fmt = 'Not found: %(reason)s'
    code = 404
    kind = 'not_found'
    title = 'Not Found'


class ReservationNotFound(NotFound):
    msg_fmt = ("Reservation(s) %(uuids)s not found for project "
               "%(project_id)s.")
    kind = 'reservation_not_found'


class LeaseNotFound(NotFound):
    msg_fmt = 'Lease %(lease_id)s could not be found.'
    kind = 'lease_not_found'


class BudgetNotFound(NotFound):
    msg_fmt = 'Project %(project_id)s has no budget of %(resource)s.'
    kind = 'budget_not_found'


class ProjectNotFound(NotFound):
    msg_fmt = "Project %(project_id)s is not registered in the limit store."
    kind = 'project_not_found'


class PolicyNotAuthorized(CyquotaException):
    msg_fmt = 'Policy does not allow %(action)s to be performed.'
    code = 403
    kind = 'forbidden'
    title = 'Forbidden'


class ReportNotFromHost(PolicyNotAuthorized):
    msg_fmt = ('A report of the allocations on host %(host)s must come from '
               'that host; this one came from %(sender)s.')


class Conflict(CyquotaException):
    msg_fmt = 'Conflict: %(reason)s'
    code = 409
    kind = 'conflict'
    title = 'Conflict'


class ReservationConflict(Conflict):
    msg_fmt = ('Cannot %(action)s reservation %(uuid)s: it is already '
               '%(status)s.')
    kind = 'reservation_conflict'


class LeaseConflict(Conflict):
    msg_fmt = 'Cannot %(action)s lease %(lease_id)s: it is %(status)s.'
    kind = 'lease_conflict'


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
        kwargs.setdefault('summary', '; '.join(_over_summary(o)
                                               for o in overs))
        super().__init__(message, overs=overs, **kwargs)
        self.overs = overs


class BudgetExhausted(CyquotaException):
    """A request would spend accelerator-hours that a project's budget of
    a resource does not have left in a period (SPEC 3.8): a reserve that
    adds holdings when the balance is at or below zero, or a lease whose
    charge of a period it spans is over that period's balance."""

    _left = ("Budget exhausted: project %(project_id)s has "
             "%(balance_hours)s hour(s) of %(resource)s left in the period "
             "%(period_start)s to %(period_end)s; ")
    msg_fmt = _left + "%(requested_hours)s requested."
    #: A reserve asks no hours ahead (``requested_hours`` 0): it needs a
    #: balance above zero.
    reserve_fmt = _left + "adding holdings needs a balance above zero."
    code = 403
    kind = 'budget_exhausted'
    title = 'Forbidden'

    def __init__(self, message=None, **kwargs):
        if message is None and not kwargs.get('requested_hours'):
            message = self.reserve_fmt % kwargs
        super().__init__(message, **kwargs)


def _over_summary(over):
    """An ``overs`` entry in words: the peak of pending leases
    (``promised``) and, for a lease, what other leases hold at the peak of
    its window (``leases``) only where they played a part."""
    counts = ['limit %(limit)s', 'used %(used)s', 'reserved %(reserved)s']
    counts += ['%s %%(%s)s' % (label, key) for key, label in (
        ('promised', 'promised'), ('leases', 'held by leases'))
        if over.get(key)]
    counts.append('requested %(requested)s')
    return ('%(scope)s %(project_id)s over limit for %(resource)s ('
            + ', '.join(counts) + ')') % over


class EnforcementDenied(CyquotaException):
    """A usage-enforcement filter refused a lease create or update; the
    message is the filter's own (``filter`` names the filter)."""

    msg_fmt = '%(reason)s'
    code = 403
    kind = 'enforcement_denied'
    title = 'Forbidden'


# -- REST input ---------------------------------------------------------

class InvalidQuery(Invalid):
    msg_fmt = '%(detail)s'
    kind = 'invalid_query'


class InvalidMemberOf(InvalidQuery):
    kind = 'invalid_member_of'


class InvalidBody(Invalid):
    msg_fmt = '%(detail)s'
    kind = 'invalid_body'


class RequestTooLarge(CyquotaException):
    msg_fmt = ('Request body of %(size)s bytes is larger than the '
               '%(limit)s bytes allowed.')
    code = 413
    kind = 'request_too_large'
    title = 'Request Entity Too Large'


class UnsupportedMediaType(CyquotaException):
    msg_fmt = ('The media type %(media_type)s is not supported, use '
               'application/json')
    code = 415
    kind = 'unsupported_media_type'
    title = 'Unsupported Media Type'


class InvalidMicroversion(Invalid):
    msg_fmt = ("Invalid %(header)s header '%(service)s %(version)s': the "
               "version is 'X.Y' (two whole numbers) or 'latest'.")
    kind = 'invalid_version'


class NeedsMicroversion(Invalid):
    msg_fmt = '%(what)s needs %(header)s: %(value)s or later.'
    kind = 'invalid_version'


class UnsupportedMicroversion(CyquotaException):
    msg_fmt = ('Version %(version)s of %(service)s is not served: this API '
               'serves %(min_version)s to %(max_version)s.')
    code = 406
    kind = 'unsupported_version'
    title = 'Not Acceptable'


# -- bounds of a project's leases and of the policy service ---------------

class LeaseLimitExceeded(CyquotaException):
    """The project holds ``[leases] max_leases_per_project`` leases (live,
    and ERROR ones whose window has not passed) already."""

    msg_fmt = ('Project %(project_id)s holds as many leases as [leases] '
               'max_leases_per_project allows (%(limit)s: PENDING, ACTIVE, '
               'and ERROR until their end_date); end one before creating '
               'another.')
    code = 403
    kind = 'lease_limit'
    title = 'Forbidden'


class EnforcementUnavailable(EnforcementDenied):
    """A usage-enforcement filter could not decide (its service could not
    be reached, timed out, or answered neither allow nor deny): the request
    is refused as a denial is, but a refused create is not stored (no ERROR
    lease: the service refused nothing)."""
