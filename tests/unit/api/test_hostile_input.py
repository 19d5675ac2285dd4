"""What a client sends costs time linear in its size, before and after
authentication: the JSON depth check of a body, the request log of a path
and query (and its mask of secrets). Each hostile input is measured
against a benign one of the same size, in the same test."""

import logging
import time

import pytest
import webtest

from cyquota.api import app
from cyquota.api import validation
from cyquota import exception

ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
JSON = {'Content-Type': 'application/json'}
#: A body just under ``[api] max_request_body_size``'s default (1 MiB).
BODY = 1000 * 1000
#: A request line of 256 KB (waitress's default limit of a request head).
LINE = 256 * 1024
# An unclosed string of escaped quotes: 24 KB of it held a worker 7.8 s
# when the depth check's pattern backtracked.
HOSTILE_BODY = b'"' + b'\\"' * ((BODY - 1) // 2)
BENIGN_BODY = b'{"name": "' + b'x' * (BODY - 13) + b'"}'


def _seconds(call):
    """The least time of a few calls of ``call()``."""
    best = float('inf')
    for _ in range(3):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def _sized(unit, size):
    return (unit * (size // len(unit) + 1))[:size]


def test_the_depth_check_costs_what_a_benign_body_does():
    assert len(HOSTILE_BODY) == len(BENIGN_BODY)
    benign = _seconds(lambda: validation.check_depth(BENIGN_BODY))
    hostile = _seconds(lambda: validation.check_depth(HOSTILE_BODY))
    assert hostile <= 3 * benign + 0.05, (hostile, benign)


def test_the_depth_check_reads_strings_and_their_escapes():
    validation.check_depth(b'{"a": ["]]]]\\\\", "\\"[[[[[[[[[[[[[[[[[[[[[['
                           b'[[[[[[[[[[[[[[["]}')
    with pytest.raises(exception.InvalidBody):
        validation.check_depth(b'["\\\\"' + b'[' * 33)


@pytest.fixture
def api(sqlite_db):
    return webtest.TestApp(app.setup_app())


def test_a_hostile_body_is_a_400_in_the_time_of_a_benign_one(api):
    def post(body):
        return lambda: api.post('/v1/leases', body, headers=dict(
            ADMIN, **JSON), status=400)

    assert post(HOSTILE_BODY)().json['errors'][0]['code'] == (
        'cyquota.invalid_body')
    benign = _seconds(post(BENIGN_BODY))
    hostile = _seconds(post(HOSTILE_BODY))
    assert hostile <= 3 * benign + 0.05, (hostile, benign)


def test_the_body_of_a_get_is_not_read(api):
    """A GET has no body to check or decode: 10,000 brackets are not a
    400, nor a 500."""
    response = api.request('/v1/limits', method='GET', headers=dict(
        ADMIN, **JSON), body=b'[' * 10000)
    assert response.status_int == 200
    assert 'limits' in response.json


def test_the_version_document_drops_a_body_unread(keystone_auth):
    """``GET /`` needs no token under keystone: its body is never read."""
    response = keystone_auth.request('/', method='GET', headers=JSON,
                                     body=HOSTILE_BODY)
    assert response.json['versions'][0]['id'] == 'v1'


# A path of "/:" (each "/" a user's lead for the mask): 12 KB of it held
# its 401 3.8 s; a query of 169 KB, 58.9 s.
HOSTILE_LINES = {
    'path': '/v1/limits/' + _sized('/:', LINE),
    'query': '/v1/limits?a=' + _sized('/:', LINE),
}
BENIGN_LINE = '/v1/limits?' + _sized('project_id=6f1c3a9e0c1d&', LINE)


@pytest.mark.parametrize('where', sorted(HOSTILE_LINES))
def test_a_hostile_request_line_is_a_401_in_the_time_of_a_benign_one(
        keystone_auth, where):
    hostile_line = HOSTILE_LINES[where][:len(BENIGN_LINE)]
    assert len(hostile_line) == len(BENIGN_LINE)

    def get(line):
        return lambda: keystone_auth.get(line, status=401)

    benign = _seconds(get(BENIGN_LINE))
    hostile = _seconds(get(hostile_line))
    assert hostile <= 3 * benign + 0.05, (hostile, benign)


def test_the_request_log_escapes_control_characters(api, caplog):
    """A ``%0A`` of a path is no line of its own in the log."""
    with caplog.at_level(logging.INFO, 'cyquota.api.requestlog'):
        api.get('/v1/nope%0A2026-11-28 INFO forged%0D', headers=ADMIN,
                status=404)
    lines = [record.getMessage() for record in caplog.records
             if record.name == 'cyquota.api.requestlog']
    assert lines == ['GET /v1/nope\\x0a2026-11-28 INFO forged\\x0d 404 %s '
                     '%s' % (lines[0].split()[-2], lines[0].split()[-1])]


def test_the_request_log_shows_the_start_of_a_long_path(api, caplog):
    with caplog.at_level(logging.INFO, 'cyquota.api.requestlog'):
        api.get('/v1/limits/' + 'x' * LINE, headers=ADMIN, status=404)
    line, = [record.getMessage() for record in caplog.records
             if record.name == 'cyquota.api.requestlog']
    assert '/v1/limits/%s...(%d characters) 404 ' % (
        'x' * (4096 - 11), LINE + 11) in line
