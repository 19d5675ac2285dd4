"""The API's microversions: ``OpenStack-API-Version: accelerator-quota X.Y``.

Each change of behaviour a client can see after the first API (1.0) has a
minor version of its own, in ``HISTORY``; a request names the version it
speaks, or ``latest`` for ``MAX_VERSION``, in the ``OpenStack-API-Version``
header (parsed by ``microversion_parse``, as Placement does). A request
without one speaks ``DEFAULT_VERSION``: the API the product specification
describes, every path, field and status it names; unlike Placement's
default (its minimum), it is not 1.0, and it stays where it is when later
versions are added, so that a client that never sends the header never
sees a change. A malformed version is a 400 and a version outside
``MIN_VERSION`` to ``MAX_VERSION`` a 406; every other answer carries the
version it was served at and ``Vary: OpenStack-API-Version``.

Controllers ask ``is_at_least(version)``, or ``require(version)`` for a
route (404 below it), ``require(version, what)`` for a part of a request
and ``require_parameters`` for query parameters (a 400 naming it below
it).
"""

import microversion_parse
import pecan
import webob.dec
import webob.exc

from cyquota.api import errors
from cyquota import exception

SERVICE_TYPE = 'accelerator-quota'
HEADER = 'OpenStack-API-Version'
#: Where the request's version is kept in the WSGI environment.
ENVIRON_KEY = 'cyquota.microversion'
_ENVIRON_HEADER = 'HTTP_OPENSTACK_API_VERSION'


def _version(text):
    return microversion_parse.parse_version_string(text)


#: The first API: the version document, quota usages (paged), reserve
#: (``dry_run`` included), commit, rollback and the reservation list,
#: limits, registered limits, projects, and the Placement-shaped device
#: calls.
BASE = _version('1.0')
#: A reserve may name ``devices``; its answer lists their ``allocations``.
RESERVE_DEVICES = _version('1.1')
#: A reserve's ``expire`` may be whole seconds from now.
EXPIRE_SECONDS = _version('1.2')
#: ``/v1/leases``.
LEASES = _version('1.3')
#: ``GET /v1/leases`` and ``GET /v1/reservations`` take ``limit`` and
#: ``marker``, newest first, a ``next`` link on a full page.
LIST_PAGES = _version('1.4')
#: A larger ``amount`` of an ACTIVE lease grows it (a 409 before).
ACTIVE_LEASE_GROWS = _version('1.5')
#: ``POST /v1/reservations/release``.
RELEASE = _version('1.6')
#: ``GET /v1/refusals``.
REFUSALS = _version('1.7')
#: ``/v1/budgets``; the usage document's ``remaining_hours``.
BUDGETS = _version('1.8')

#: ``(version, what changed)``, oldest first: the history the version
#: document's range and the documentation's table are read from.
HISTORY = (
    (BASE, 'The first API: the version document; quota usages (the list '
           'paged with limit and marker); reserve (with dry_run), commit, '
           'rollback and the reservation list; limits, registered limits '
           'and projects; the Placement-shaped device calls.'),
    (RESERVE_DEVICES, 'POST /v1/reservations may name devices (a '
                      'Placement-style request); its answer lists the '
                      'allocations.'),
    (EXPIRE_SECONDS, "POST /v1/reservations takes expire as whole seconds "
                     "from now too, as the RPC and Python interfaces do."),
    (LEASES, 'Leases: POST, GET /v1/leases, GET, PUT and DELETE '
             '/v1/leases/{lease_id}.'),
    (LIST_PAGES, 'GET /v1/leases and GET /v1/reservations take limit and '
                 'marker: newest first, a next link on a full page.'),
    (ACTIVE_LEASE_GROWS, 'PUT /v1/leases/{lease_id} with a larger amount '
                         'grows an ACTIVE lease (a 409 before).'),
    (RELEASE, 'POST /v1/reservations/release takes amounts off used at '
              'once.'),
    (REFUSALS, 'GET /v1/refusals lists the reserves refused over quota for '
               'a consumer.'),
    (BUDGETS, 'Budgets of accelerator-hours: GET /v1/budgets/{project_id}, '
              'PUT and DELETE /v1/budgets/{project_id}/{resource}, POST '
              '.../credits, GET /v1/budgets/{project_id}/entries; the usage '
              'document shows remaining_hours where a budget is set.'),
)
MIN_VERSION = HISTORY[0][0]
MAX_VERSION = HISTORY[-1][0]
#: What a request without the header speaks: the version the product
#: specification describes. It does not follow MAX_VERSION.
DEFAULT_VERSION = BUDGETS


def _requested(environ):
    """The version the request names: DEFAULT_VERSION without the header,
    MAX_VERSION for ``latest``."""
    header = environ.get(_ENVIRON_HEADER)
    text = header and microversion_parse.get_version({HEADER: header},
                                                     SERVICE_TYPE)
    if not text:
        return DEFAULT_VERSION
    if text == 'latest':
        return MAX_VERSION
    try:
        version = _version(text)
    except TypeError:
        raise exception.InvalidMicroversion(
            header=HEADER, service=SERVICE_TYPE, version=text) from None
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise exception.UnsupportedMicroversion(
            service=SERVICE_TYPE, version=text,
            min_version=str(MIN_VERSION), max_version=str(MAX_VERSION))
    return version


def header_value(version):
    """The ``OpenStack-API-Version`` value for ``version``."""
    return '%s %s' % (SERVICE_TYPE, version)


class Middleware:
    """Read the request's version into ``environ[ENVIRON_KEY]``, refuse
    one the API does not serve, and say in the answer which version
    served it."""

    def __init__(self, application):
        self.application = application

    @webob.dec.wsgify
    def __call__(self, request):
        try:
            version = _requested(request.environ)
        except exception.CyquotaException as error:
            response = errors.response_for(error, request.environ)
        else:
            request.environ[ENVIRON_KEY] = version
            response = request.get_response(self.application)
            response.headers[HEADER] = header_value(version)
        vary = tuple(response.vary or ())
        if HEADER not in vary:
            response.vary = vary + (HEADER,)
        return response


def is_at_least(version):
    """Whether the request being served speaks ``version`` or later."""
    return pecan.request.environ.get(ENVIRON_KEY, DEFAULT_VERSION) >= version


def require(version, what=None):
    """Refuse a request below ``version``: as an unknown path (404) when
    ``what`` is None, else with a 400 saying ``what`` needs ``version``."""
    if is_at_least(version):
        return
    if what is None:
        raise webob.exc.HTTPNotFound()
    raise exception.NeedsMicroversion(what=what, header=HEADER,
                                      value=header_value(version))


def require_parameters(version, names):
    """Refuse with a 400 a request below ``version`` whose query gives one
    of ``names``."""
    for name in names:
        if name in pecan.request.GET:
            require(version, "The query parameter '%s'" % name)