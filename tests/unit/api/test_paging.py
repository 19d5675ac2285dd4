"""``GET /v1/leases`` and ``GET /v1/reservations`` a page at a time:
``limit`` (lowered to ``[api] max_limit``) and ``marker``, newest first,
a ``next`` link on a full page, filters kept from page to page, and a
page of leases read in the same number of queries whatever its size."""

import datetime
import urllib.parse

import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota.placement import providers
from tests import fixtures

ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
SERVICE = {'X-Project-Id': 'service-project', 'X-Roles': 'service'}
T0 = datetime.datetime(2026, 1, 1)
DEVICE = 'paging-device'


def member(project):
    return {'X-Project-Id': project, 'X-User-Id': 'u1', 'X-Roles': 'member'}


@pytest.fixture
def api(sqlite_db):
    yield webtest.TestApp(app.setup_app())
    CONF.clear_override('max_limit', 'api')


def add_leases(leases):
    """Store ``leases`` (``[(id, project_id, status, created_at)]``) as
    rows, each with one reservation of one FPGA on one device; returns
    their ids newest first, as the API lists them."""
    ctx = cyquota_context.get_admin_context()
    found = providers.get_all(ctx, name=DEVICE)
    provider_id = (found[0] if found else providers.create(ctx, DEVICE)).id
    end = T0 + datetime.timedelta(days=1)
    with db_api.get_engine().begin() as conn:
        conn.execute(lease_models.Lease.__table__.insert(), [
            dict(id=i, project_id=p, user_id='u1', name='lease-' + i,
                 start_date=T0, end_date=end, status=s, created_at=c)
            for i, p, s, c in leases])
        conn.execute(lease_models.LeaseReservation.__table__.insert(), [
            dict(id='r-' + i, lease_id=i, position=0, project_id=p,
                 root_id=p, resource='FPGA', amount=1, member_of='[]',
                 start_date=T0, end_date=end, status=s, created_at=c)
            for i, p, s, c in leases])
        conn.execute(placement_models.LeaseAllocation.__table__.insert(), [
            dict(lease_id=i, lease_reservation_id='r-' + i,
                 resource_provider_id=provider_id, resource_class='FPGA',
                 amount=1, start_date=T0, end_date=end, status=s,
                 created_at=c) for i, p, s, c in leases])
    return [i for i, _, _, c in sorted(leases, key=lambda lease: (
        lease[3], lease[0]), reverse=True)]


def walk(client, url, headers):
    """Every page from ``url`` on, following the ``next`` links: ``(ids,
    the pages' sizes, the links)``."""
    key = 'leases' if url.startswith('/v1/leases') else 'reservations'
    ids, sizes, links = [], [], []
    while url is not None:
        body = client.get(url, headers=headers).json
        items = body[key]
        ids += [item['id' if key == 'leases' else 'uuid'] for item in items]
        sizes.append(len(items))
        [link] = body.get('%s_links' % key, [None])
        url = None
        if link is not None:
            assert link['rel'] == 'next'
            links.append(link['href'])
            parts = urllib.parse.urlsplit(link['href'])
            url = '%s?%s' % (parts.path, parts.query)
    return ids, sizes, links


def _query(href):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(href).query))


def _leases(count, project='p1', status='ACTIVE', start=0, same_time=False):
    return [('%s-%04d' % (project, start + n), project, status,
             T0 if same_time else T0 + datetime.timedelta(seconds=start + n))
            for n in range(count)]


# -- leases ---------------------------------------------------------------

def test_pages_of_leases_list_each_once_newest_first(api):
    expected = add_leases(_leases(10) + _leases(7, 'p2', start=10))
    ids, sizes, links = walk(api, '/v1/leases?limit=4', ADMIN)
    assert ids == expected
    assert sizes == [4, 4, 4, 4, 1]
    assert [_query(href) for href in links] == [
        {'limit': '4', 'marker': expected[n]} for n in (3, 7, 11, 15)]
    assert links[0].startswith('http://localhost/v1/leases?')


def test_the_same_instant_is_ordered_by_id(api):
    expected = add_leases(_leases(5, same_time=True) + _leases(3, start=5))
    assert expected == ['p1-%04d' % n for n in (7, 6, 5, 4, 3, 2, 1, 0)]
    assert walk(api, '/v1/leases?limit=1', ADMIN)[0] == expected
    assert walk(api, '/v1/leases?limit=3', ADMIN)[0] == expected


def test_filters_are_kept_in_the_next_link(api):
    add_leases(_leases(6) + _leases(5, status='ENDED', start=6)
               + _leases(4, 'p2', start=11))
    ids, sizes, links = walk(
        api, '/v1/leases?project_id=p1&status=ENDED&limit=2', ADMIN)
    assert ids == ['p1-%04d' % n for n in (10, 9, 8, 7, 6)]
    assert sizes == [2, 2, 1]
    assert _query(links[0]) == {'limit': '2', 'marker': 'p1-0009',
                                'project_id': 'p1', 'status': 'ENDED'}
    # A member lists its own project without naming it; so do its links.
    ids, _, links = walk(api, '/v1/leases?limit=3', member('p2'))
    assert ids == ['p2-%04d' % n for n in (14, 13, 12, 11)]
    assert _query(links[0]) == {'limit': '3', 'marker': 'p2-0012'}


def test_a_page_that_ends_the_list_links_to_an_empty_one(api):
    expected = add_leases(_leases(4))
    ids, sizes, links = walk(api, '/v1/leases?limit=2', ADMIN)
    assert (ids, sizes, len(links)) == (expected, [2, 2, 0], 2)


def test_a_lease_listed_under_its_view(api):
    add_leases(_leases(2))
    [lease] = api.get('/v1/leases?limit=1&marker=p1-0001',
                      headers=ADMIN).json['leases']
    assert lease['id'] == 'p1-0000'
    assert lease['reservations'][0]['allocations'] == [{
        'id': lease['reservations'][0]['allocations'][0]['id'],
        'resource_provider_name': 'paging-device', 'amount': 1}]


def test_limit_is_lowered_to_max_limit(api):
    add_leases(_leases(5))
    CONF.set_override('max_limit', 2, 'api')
    for url in ('/v1/leases', '/v1/leases?limit=3',
                '/v1/leases?limit=99999999999999999999999999'):
        body = api.get(url, headers=ADMIN).json
        assert len(body['leases']) == 2
        assert _query(body['leases_links'][0]['href'])['limit'] == '2'
    assert walk(api, '/v1/leases', ADMIN)[1] == [2, 2, 1]
    CONF.clear_override('max_limit', 'api')
    body = api.get('/v1/leases', headers=ADMIN).json
    assert (len(body['leases']), 'leases_links' in body) == (5, False)


@pytest.mark.parametrize('url', ['/v1/leases', '/v1/reservations'])
@pytest.mark.parametrize('limit', ['0', '-1', 'two', '01', '1.5', ''])
def test_a_bad_limit_is_a_400(api, url, limit):
    error = api.get('%s?limit=%s' % (url, urllib.parse.quote(limit)),
                    headers=ADMIN, status=400).json['errors'][0]
    assert (error['code'], error['detail']) == (
        'cyquota.invalid_query', "Invalid query string parameters: 'limit' "
        "must be a positive integer. Got: %s" % limit)


@pytest.mark.parametrize('marker', ['no-such-lease', 'a' * 37, 'caf\xe9'])
def test_a_marker_that_names_no_lease_is_a_400(api, marker):
    add_leases(_leases(2))
    error = api.get('/v1/leases?' + urllib.parse.urlencode({
        'marker': marker}), headers=ADMIN, status=400).json['errors'][0]
    assert (error['code'], error['detail']) == (
        'cyquota.invalid_query', 'marker [%s] not found' % marker)


def test_a_marker_with_a_nul_is_a_400_naming_it(api):
    add_leases(_leases(2))
    error = api.get('/v1/leases?marker=a%00b', headers=ADMIN,
                    status=400).json['errors'][0]
    assert (error['code'], error['detail']) == (
        'cyquota.invalid_query', "Invalid query string parameters: "
        "'marker' must not contain a NUL character")


def test_another_projects_lease_is_no_marker(api):
    add_leases(_leases(2) + _leases(2, 'p2', start=2))
    for url, headers in (('/v1/leases?marker=p2-0003', member('p1')),
                         ('/v1/leases?project_id=p1&marker=p2-0003', ADMIN)):
        assert api.get(url, headers=headers, status=400).json['errors'][0][
            'detail'] == 'marker [p2-0003] not found'
    # Its status is no part of the position: an ENDED marker still pages
    # an ACTIVE listing.
    add_leases([('p1-ended', 'p1', 'ENDED', T0 + datetime.timedelta(
        seconds=1, microseconds=1))])
    assert [lease['id'] for lease in api.get(
        '/v1/leases?status=ACTIVE&marker=p1-ended',
        headers=member('p1')).json['leases']] == ['p1-0001', 'p1-0000']


def test_a_page_of_leases_takes_the_same_queries_whatever_its_size(api):
    add_leases(_leases(120))
    api.get('/v1/leases?limit=1', headers=ADMIN)  # warms the app's caches
    counts = {}
    for query in ('limit=1', 'limit=50', 'limit=50&marker=p1-0100',
                  'limit=1&marker=p1-0100'):
        with fixtures.statements_sent() as sent:
            body = api.get('/v1/leases?' + query, headers=ADMIN).json
        assert body['leases'][0]['reservations'][0]['allocations']
        counts[query] = len([s for s in sent if s.lstrip().upper()
                             .startswith('SELECT')])
    assert counts == {'limit=1': 4, 'limit=50': 4,
                      'limit=50&marker=p1-0100': 5,
                      'limit=1&marker=p1-0100': 5}


# -- reservations ---------------------------------------------------------

def _reserve(client, project, count):
    """``count`` reserves of one FPGA each for ``project``; their uuids."""
    return [client.post_json('/v1/reservations', {
        'project_id': project, 'deltas': {'FPGA': 1}},
        headers=SERVICE).json['reservations'][0] for _ in range(count)]


def test_pages_of_reservations_list_each_once_newest_first(api):
    made = _reserve(api, 'p1', 4) + _reserve(api, 'p2', 3)
    made += _reserve(api, 'p1', 3)
    api.post_json('/v1/reservations/commit', {
        'project_id': 'p1', 'reservations': made[:2]}, headers=SERVICE)
    ids, sizes, links = walk(api, '/v1/reservations?limit=3', ADMIN)
    assert (ids, sizes) == (made[::-1], [3, 3, 3, 1])
    assert _query(links[0]) == {'limit': '3', 'marker': made[-3]}

    ids, sizes, links = walk(
        api, '/v1/reservations?project_id=p1&status=reserved&limit=2',
        ADMIN)
    assert (ids, sizes) == ((made[2:4] + made[7:])[::-1], [2, 2, 1])
    assert _query(links[0]) == {'limit': '2', 'marker': made[8],
                                'project_id': 'p1', 'status': 'reserved'}


def test_reservations_limit_is_lowered_and_markers_checked(api):
    made = _reserve(api, 'p1', 3) + _reserve(api, 'p2', 1)
    CONF.set_override('max_limit', 2, 'api')
    body = api.get('/v1/reservations?limit=1000', headers=ADMIN).json
    assert [row['uuid'] for row in body['reservations']] == made[:1:-1]
    assert _query(body['reservations_links'][0]['href']) == {
        'limit': '2', 'marker': made[2]}
    for url in ('/v1/reservations?marker=nope',
                '/v1/reservations?project_id=p1&marker=%s' % made[3]):
        marker = url.rsplit('=', 1)[1]
        assert api.get(url, headers=ADMIN, status=400).json['errors'][0][
            'detail'] == 'marker [%s] not found' % marker
    assert [row['uuid'] for row in api.get(
        '/v1/reservations?project_id=p1&marker=%s' % made[2],
        headers=ADMIN).json['reservations']] == made[1::-1]
