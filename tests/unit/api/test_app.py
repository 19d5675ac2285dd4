"""The app's plumbing that YAML cannot see: context, request ids, and the
one error renderer."""

import webob
import webtest

from cyquota.api import app
from cyquota.api.controllers.v1 import openapi
from cyquota.api import errors
from cyquota.api import hooks
from cyquota import exception
from cyquota.placement import candidates


class _State:
    def __init__(self, request):
        self.request = request


def test_context_from_noauth_headers():
    request = webob.Request.blank('/', headers={
        'X-Project-Id': 'p1', 'X-User-Id': 'u1', 'X-Roles': 'reader, admin'})
    request.environ['openstack.request_id'] = 'req-1'
    state = _State(request)
    hooks.ContextHook().before(state)
    context = state.request.context
    assert (context.project_id, context.user_id) == ('p1', 'u1')
    assert context.roles == ['reader', 'admin']
    assert context.is_admin
    assert context.request_id == 'req-1'


def test_context_without_admin_role():
    state = _State(webob.Request.blank('/', headers={'X-Roles': 'member'}))
    hooks.ContextHook().before(state)
    assert not state.request.context.is_admin
    assert state.request.context.project_id is None


def test_error_request_id_is_the_response_header(sqlite_db):
    response = webtest.TestApp(app.setup_app()).get('/v1/nope', status=404)
    assert response.json['errors'][0]['request_id'] == response.headers[
        'X-Openstack-Request-Id']


def test_every_error_kind_renders():
    environ = {'openstack.request_id': 'req-2', 'REQUEST_METHOD': 'GET'}
    over = exception.OverQuota(overs=[{
        'project_id': 'p', 'resource': 'FPGA', 'scope': 'project',
        'limit': 1, 'used': 1, 'reserved': 0, 'requested': 1}])
    body = errors.response_for(over, environ).json['errors'][0]
    assert (body['status'], body['code']) == (403, 'cyquota.over_quota')
    assert body['overs'][0]['resource'] == 'FPGA'
    assert body['request_id'] == 'req-2'
    response = errors.response_for(ValueError('secret'), environ)
    assert response.status_int == 500
    assert 'secret' not in response.text
    assert errors.response_for(
        webob.exc.HTTPNotFound(), environ).json['errors'][0]['code'] == (
        'cyquota.not_found')


def test_a_bug_is_a_500_without_a_traceback(sqlite_db, monkeypatch):
    def broken(context, device_request):
        raise KeyError('internal detail')
    monkeypatch.setattr(candidates, 'search', broken)
    response = webtest.TestApp(app.setup_app()).get(
        '/v1/allocation_candidates?resources=FPGA:1', status=500,
        headers={'X-Roles': 'admin'})
    assert response.json['errors'][0]['code'] == 'cyquota.internal_error'
    assert 'internal detail' not in response.text


def test_a_malformed_form_body_is_a_400_not_a_500(sqlite_db):
    response = webtest.TestApp(app.setup_app()).post(
        '/v1/reservations', '{}', expect_errors=True,
        headers={'Content-Type': 'multipart/form-data', 'X-Roles': 'admin'})
    assert response.status_int == 400
    assert response.json['errors'][0]['detail'] == (
        'Form bodies (multipart/form-data) are not accepted: send '
        'application/json')


def test_a_body_of_another_media_type_is_a_415(sqlite_db):
    response = webtest.TestApp(app.setup_app()).post(
        '/v1/reservations', '{}', expect_errors=True,
        headers={'Content-Type': 'text/plain', 'X-Roles': 'admin'})
    assert response.status_int == 415
    assert response.json['errors'][0]['code'] == \
        'cyquota.unsupported_media_type'


_ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'p1'}
_JSON = dict(_ADMIN, **{'Content-Type': 'application/json'})


def _error(response):
    [error] = response.json['errors']
    return error['code'], error['detail']


def test_deeply_nested_json_is_refused_before_it_is_decoded(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    deep = '[' * 10000 + ']' * 10000
    for path in ('/v1/reservations', '/v1/leases'):
        response = api.post(path, deep, headers=_JSON, status=400)
        assert _error(response) == (
            'cyquota.invalid_body',
            'Malformed JSON: nested deeper than 32 levels')
    # Brackets inside strings are not nesting.
    api.post('/v1/reservations', '{"project_id": "p1", "deltas": '
             '{"FPGA": 1}, "request_id": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['
             '[[[["}', headers=_JSON, status=201)


def test_a_key_given_twice_is_refused_and_named(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    response = api.post(
        '/v1/reservations', '{"project_id": "a", "project_id": "b", '
        '"deltas": {"FPGA": 1}}', headers=_JSON, status=400)
    assert _error(response) == ('cyquota.invalid_body',
                                "Malformed JSON: duplicate key 'project_id'")
    usage = api.get('/v1/quota_usages/b', headers=_ADMIN).json
    assert usage['quota_usage']['resources']['FPGA']['reserved'] == 0


_PATH_VALUES = {'project_id': 'p1', 'resource': 'FPGA',
                'uuid': '00000000-0000-0000-0000-000000000000',
                'lease_id': '00000000-0000-0000-0000-000000000000'}


def _operations(methods=('get', 'put', 'post', 'delete')):
    """``(METHOD, path)`` of every operation of openapi.yaml with ``methods``,
    its path parameters filled in."""
    return [(method.upper(), template.format(**_PATH_VALUES))
            for template, item in openapi.document()['paths'].items()
            for method in item if method in methods]


def test_the_bad_input_cases_cover_every_operation():
    paths = openapi.document()['paths'].values()
    assert len(_operations()) == sum(
        len([m for m in item if m in ('get', 'put', 'post', 'delete',
                                      'patch', 'head', 'options')])
        for item in paths)
    # Every operation that takes a body is a PUT or a POST.
    assert len(_operations(('put', 'post'))) == sum(
        len([op for op in item.values()
             if isinstance(op, dict) and 'requestBody' in op])
        for item in paths)


def test_multipart_without_a_boundary_is_a_400_on_every_operation(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    form = dict(_ADMIN, **{'Content-Type': 'multipart/form-data'})
    for method, path in _operations():
        body = b'{}' if method in ('PUT', 'POST') else b''
        response = api.request(path, method=method, body=body, headers=form,
                               expect_errors=True)
        assert response.status_int == 400, (method, path, response.text)
        assert _error(response) == (
            'cyquota.invalid_body', 'Form bodies (multipart/form-data) are '
            'not accepted: send application/json')


def test_json_nested_10000_deep_is_a_400_on_every_body(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    deep = ('{"a": ' * 10000 + '1' + '}' * 10000).encode()
    for method, path in _operations(('put', 'post')):
        response = api.request(path, method=method, body=deep, headers=_JSON,
                               expect_errors=True)
        assert response.status_int == 400, (method, path, response.text)
        assert _error(response) == (
            'cyquota.invalid_body',
            'Malformed JSON: nested deeper than 32 levels')


def test_a_key_given_twice_is_a_400_on_every_body(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    for method, path in _operations(('put', 'post')):
        response = api.request(path, method=method, headers=_JSON,
                               body=b'{"name": "a", "name": "b"}',
                               expect_errors=True)
        assert response.status_int == 400, (method, path, response.text)
        assert _error(response) == (
            'cyquota.invalid_body', "Malformed JSON: duplicate key 'name'")


def test_text_no_database_can_hold_is_a_400_on_every_body(sqlite_db):
    api = webtest.TestApp(app.setup_app())
    for text, detail in (
            (r'"a\u0000"', 'a string holds a NUL character (\\u0000)'),
            (r'"\ud800"', 'a string holds an unpaired surrogate')):
        body = ('{"name": %s, "names": [%s]}' % (text, text)).encode()
        for method, path in _operations(('put', 'post')):
            response = api.request(path, method=method, body=body,
                                   headers=_JSON, expect_errors=True)
            assert response.status_int == 400, (method, path, response.text)
            assert _error(response) == ('cyquota.invalid_body',
                                        'Malformed JSON: ' + detail)
