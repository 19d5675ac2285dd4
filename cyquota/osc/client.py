"""cyquota's REST API through a keystoneauth session, for the commands.

The endpoint is the one the shell resolved (the service catalog's
``accelerator-quota`` entry, an ``accelerator_quota_endpoint_override``,
or ``--os-endpoint`` with ``--os-auth-type none`` or ``admin_token``);
the paths carry the ``/v1`` prefix, as the catalog holds the unversioned
root. Error answers become ``ApiError``: one line, and exit code 1.

Each call names its API microversion in ``OpenStack-API-Version``: the
one the user pinned, else ``KNOWN_VERSION``, the newest these commands
know; a cyquota that does not serve it answers 406 before doing
anything, and the call is sent again at the newest version of the range
its version document gives, once for the client's life.
"""

from urllib import parse

from keystoneauth1 import adapter
from osc_lib import exceptions

SERVICE_TYPE = 'accelerator-quota'
#: The newest API microversion these commands know.
KNOWN_VERSION = '1.8'


class ApiError(exceptions.CommandError):
    """An error answer of the API, as the one line the shell prints."""

    def __init__(self, response):
        super().__init__(_describe(response))


def _describe(response):
    """``detail (HTTP status code, request id)`` of each error in the
    SPEC 4.1 document, or the status line when the body is not one."""
    try:
        errors = response.json()['errors']
        return '; '.join('%s (HTTP %s %s, %s)' % (
            error['detail'], error['status'], error['code'],
            error['request_id']) for error in errors)
    except (ValueError, KeyError, TypeError):
        return 'HTTP %d %s from %s' % (response.status_code,
                                       response.reason, response.url)


def _version(text):
    """``(major, minor)`` of ``X.Y``; ValueError otherwise."""
    major, minor = text.split('.')
    return int(major), int(minor)


def _segment(value):
    """``value`` as one path segment, whatever characters it has."""
    return parse.quote(str(value), safe='')


class Client:
    """The calls the commands make, each returning the decoded answer.

    :param session: the shell's keystoneauth session.
    :param endpoint: cyquota's root URL.
    :param identity_headers: ``X-Project-Id``, ``X-User-Id`` and
        ``X-Roles`` to send to a ``noauth`` cyquota-api (keystonemiddleware
        replaces them under ``keystone``).
    :param api_version: the microversion to speak, ``X.Y``; None to
        negotiate.
    """

    def __init__(self, session, endpoint, region_name=None, interface=None,
                 identity_headers=None, api_version=None):
        self._negotiating = api_version is None
        self._adapter = adapter.Adapter(
            session, service_type=SERVICE_TYPE, endpoint_override=endpoint,
            region_name=region_name, interface=interface,
            additional_headers=identity_headers or {},
            client_name='cyquota-osc',
            default_microversion=api_version or KNOWN_VERSION)

    def _call(self, method, path, **kwargs):
        response = self._adapter.request(path, method, raise_exc=False,
                                         **kwargs)
        if response.status_code == 406 and self._negotiating:
            self._negotiating = False
            self._adapter.default_microversion = self._newest_served()
            response = self._adapter.request(path, method, raise_exc=False,
                                             **kwargs)
        if response.status_code >= 400:
            raise ApiError(response)
        return response.json() if response.content else None

    def _newest_served(self):
        """The newest microversion that the version document (``GET /``)
        gives and these commands know; ``KNOWN_VERSION`` when the
        document gives none, so that the 406 is what the user sees."""
        response = self._adapter.request('/', 'GET', raise_exc=False,
                                         microversion=None)
        try:
            served = response.json()['versions'][0]
            newest = min(_version(served['max_version']),
                         _version(KNOWN_VERSION))
            if newest >= _version(served['min_version']):
                return '%d.%d' % newest
        except (ValueError, KeyError, IndexError, TypeError,
                AttributeError):
            pass
        return KNOWN_VERSION

    @staticmethod
    def _query(**params):
        return {key: value for key, value in params.items()
                if value is not None}

    def show_usage(self, project_id):
        """``GET /v1/quota_usages/{project_id}``: the usage document."""
        return self._call('GET', '/v1/quota_usages/%s' % _segment(
            project_id))['quota_usage']

    def list_usages(self, project_id=None, resource=None, limit=None,
                    marker=None):
        """``GET /v1/quota_usages``: one page of rows and whether a next
        page follows."""
        page = self._call('GET', '/v1/quota_usages', params=self._query(
            project_id=project_id, resource=resource, limit=limit,
            marker=marker))
        more = any(link['rel'] == 'next'
                   for link in page.get('quota_usages_links', ()))
        return page['quota_usages'], more

    def _every_page(self, name, key, limit=None, marker=None, path=None,
                    **filters):
        """The items of ``GET /v1/<path>`` (default: ``name``, the key of
        the items) after ``marker``, page after page while a page has a
        ``next`` link, at most ``limit`` of them (all when None); the next
        page starts after the ``key`` of the last item, as the link's
        marker does."""
        items = []
        while True:
            wanted = None if limit is None else limit - len(items)
            page = self._call('GET', '/v1/' + (path or name),
                              params=self._query(limit=wanted, marker=marker,
                                                 **filters))
            items += page[name]
            more = any(link['rel'] == 'next'
                       for link in page.get(name + '_links', ()))
            if not (more and page[name]) or (limit is not None
                                             and len(items) >= limit):
                return items
            marker = items[-1][key]

    def list_reservations(self, project_id=None, status=None, limit=None,
                          marker=None):
        """``GET /v1/reservations``, newest first: every page after the
        reservation ``marker``, at most ``limit`` rows."""
        return self._every_page('reservations', 'uuid', limit, marker,
                                project_id=project_id, status=status)

    def list_refusals(self, consumer_id=None, project_id=None, limit=None,
                      marker=None):
        """``GET /v1/refusals``, newest first: every page after the
        refusal ``marker``, at most ``limit`` rows."""
        return self._every_page('refusals', 'id', limit, marker,
                                consumer_id=consumer_id,
                                project_id=project_id)

    def create_lease(self, lease):
        """``POST /v1/leases`` with the ``lease`` object."""
        return self._call('POST', '/v1/leases', json={'lease': lease})[
            'lease']

    def list_leases(self, project_id=None, status=None, limit=None,
                    marker=None):
        """``GET /v1/leases``, newest first: every page after the lease
        ``marker``, at most ``limit`` leases."""
        return self._every_page('leases', 'id', limit, marker,
                                project_id=project_id, status=status)

    def show_lease(self, lease_id):
        """``GET /v1/leases/{id}``."""
        return self._call('GET', '/v1/leases/%s' % _segment(lease_id))[
            'lease']

    def update_lease(self, lease_id, changes):
        """``PUT /v1/leases/{id}`` with the partial ``lease`` object."""
        return self._call('PUT', '/v1/leases/%s' % _segment(lease_id),
                          json={'lease': changes})['lease']

    def delete_lease(self, lease_id):
        """``DELETE /v1/leases/{id}``: end the lease now."""
        self._call('DELETE', '/v1/leases/%s' % _segment(lease_id))

    def list_limits(self, project_id=None):
        """``GET /v1/limits``: explicit project limits."""
        return self._call('GET', '/v1/limits', params=self._query(
            project_id=project_id))['limits']

    def set_limit(self, project_id, resource, resource_limit):
        """``PUT /v1/limits/{project_id}/{resource}``."""
        return self._call('PUT', self._limit_path(project_id, resource),
                          json={'resource_limit': resource_limit})['limit']

    def delete_limit(self, project_id, resource):
        """``DELETE /v1/limits/{project_id}/{resource}``."""
        self._call('DELETE', self._limit_path(project_id, resource))

    @staticmethod
    def _limit_path(project_id, resource):
        return '/v1/limits/%s/%s' % (_segment(project_id),
                                     _segment(resource))

    def show_budget(self, project_id):
        """``GET /v1/budgets/{project_id}``: the budget document."""
        return self._call('GET', '/v1/budgets/%s' % _segment(project_id))[
            'budget']

    def set_budget(self, project_id, resource, budget):
        """``PUT /v1/budgets/{project_id}/{resource}`` with ``budget``
        (``{"hours", "refill"?, "cap"?}``); the budget document."""
        return self._call('PUT', self._budget_path(project_id, resource),
                          json=budget)['budget']

    def delete_budget(self, project_id, resource):
        """``DELETE /v1/budgets/{project_id}/{resource}``."""
        self._call('DELETE', self._budget_path(project_id, resource))

    def credit_budget(self, project_id, resource, hours, reason):
        """``POST /v1/budgets/{project_id}/{resource}/credits``; the
        entry written."""
        return self._call(
            'POST', self._budget_path(project_id, resource) + '/credits',
            json={'hours': hours, 'reason': reason})['entry']

    def list_budget_entries(self, project_id, limit=None, marker=None):
        """``GET /v1/budgets/{project_id}/entries``, newest first: every
        page after the entry ``marker``, at most ``limit`` entries."""
        return self._every_page(
            'entries', 'id', limit, marker,
            path='budgets/%s/entries' % _segment(project_id))

    @staticmethod
    def _budget_path(project_id, resource):
        return '/v1/budgets/%s/%s' % (_segment(project_id),
                                      _segment(resource))
