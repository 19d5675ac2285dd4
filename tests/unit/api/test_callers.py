"""Who a caller is: a caller without a project owns no project, and dates
outside what UTC can hold are refused, never a 500."""

import pytest
import webtest

from cyquota.api import app

LEASE = {'lease': {'end_date': '2030-01-01T00:00:00+00:00',
                   'reservations': [{'resource_type': 'accelerator:FPGA',
                                     'amount': 1}]}}


@pytest.fixture
def api(sqlite_db):
    return webtest.TestApp(app.setup_app())


# oslo.policy compares the caller's project as str(None): a member sent
# without X-Project-Id acted for the project named "None".
@pytest.mark.parametrize('method, path, body', [
    ('get', '/v1/quota_usages/None', None),
    ('get', '/v1/leases', None),
    ('get', '/v1/leases?project_id=None', None),
    ('post', '/v1/leases', LEASE),
])
@pytest.mark.parametrize('role', ['member', 'reader'])
def test_a_caller_without_a_project_acts_for_none(api, method, path, body,
                                                  role):
    headers = {'X-Roles': role, 'X-User-Id': 'u1'}
    if body is None:
        response = api.get(path, headers=headers, status='*')
    else:
        response = api.post_json(path, body, headers=headers, status='*')
    assert response.status_int == 403, response.text
    assert response.json['errors'][0]['code'] == 'cyquota.forbidden'
    assert api.get('/v1/leases', headers={'X-Roles': 'admin'}).json == {
        'leases': []}


def test_the_project_named_none_is_still_its_members(api):
    response = api.get('/v1/quota_usages/None', headers={
        'X-Roles': 'member', 'X-Project-Id': 'None'})
    assert response.json['quota_usage']['project_id'] == 'None'


@pytest.mark.parametrize('expire', ['0001-01-01T00:00:00+01:00',
                                    '9999-12-31T23:30:00-01:00'])
def test_an_expiry_outside_utc_is_a_400(api, expire):
    response = api.post_json('/v1/reservations', {
        'project_id': 'p1', 'deltas': {'FPGA': 1}, 'expire': expire},
        headers={'X-Roles': 'service'}, status=400)
    assert response.json['errors'][0]['detail'] == (
        "Invalid expire '%s': it leaves the years 1-9999 once moved to UTC"
        % expire)
    usage = api.get('/v1/quota_usages/p1', headers={'X-Roles': 'admin'})
    assert usage.json['quota_usage']['resources']['FPGA']['reserved'] == 0
