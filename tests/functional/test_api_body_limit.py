"""``[api] max_request_body_size`` against a real ``cyquota-api`` over a
raw socket: a body past the limit, announced or chunked, is refused with
413 in the API's error document as soon as the limit is passed, on every
route, while the client has sent only the start of it."""

import json
import socket
import time

import pytest
import requests

from servers import api_server
from tests import commands

LIMIT = 1048576  # the default
SERVICE = {'X-Project-Id': 'service-project', 'X-Roles': 'service'}


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp('api')
    server = api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'), directory=directory)
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    with server:
        yield server


def _connect(server):
    sock = socket.create_connection(('127.0.0.1', server.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    return sock


def _head(path, **headers):
    lines = ['POST %s HTTP/1.1' % path, 'Host: 127.0.0.1',
             'Content-Type: application/json', 'X-Roles: admin']
    lines += ['%s: %s' % (name.replace('_', '-'), value)
              for name, value in headers.items()]
    return ('\r\n'.join(lines) + '\r\n\r\n').encode()


def _response(sock):
    """(status, headers, JSON body) of the one response on ``sock``, read
    until the server closes the connection."""
    data = b''
    while True:
        try:
            got = sock.recv(65536)
        except ConnectionResetError:
            break
        if not got:
            break
        data += got
    head, _, body = data.partition(b'\r\n\r\n')
    lines = head.decode().split('\r\n')
    headers = dict(line.lower().split(': ', 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


def _refused(status, headers, body, size):
    assert status == 413, body
    [error] = body['errors']
    assert error['code'] == 'cyquota.request_too_large'
    assert error['detail'] == (
        'Request body of %s bytes is larger than the %d bytes allowed.'
        % (size, LIMIT))
    assert error['request_id'] == headers['x-openstack-request-id']


@pytest.mark.parametrize('path', ['/healthcheck', '/metrics',
                                  '/v1/reservations', '/nowhere'])
def test_a_100_mb_body_is_refused_before_it_is_sent(server, path):
    size = 100 * 1024 * 1024
    started = time.monotonic()
    with _connect(server) as sock:
        sock.sendall(_head(path, Content_Length=size) + b'x' * 65536)
        status, headers, body = _response(sock)
    assert time.monotonic() - started < 5
    _refused(status, headers, body, size)
    assert 'POST %s 413' % path in server.log()


def test_a_chunked_body_is_refused_once_past_the_limit(server):
    chunk = b'x' * 65536
    started = time.monotonic()
    with _connect(server) as sock:
        sock.sendall(_head('/v1/reservations', Transfer_Encoding='chunked'))
        # One chunk past the limit and no last chunk: the answer comes
        # without the end of the body.
        for _ in range(LIMIT // len(chunk) + 1):
            sock.sendall(b'%x\r\n%s\r\n' % (len(chunk), chunk))
        status, headers, body = _response(sock)
    assert time.monotonic() - started < 5
    _refused(status, headers, body, 'more than %d' % LIMIT)


def test_bodies_within_the_limit_are_served(server):
    def chunks():
        yield b'{"project_id": "p1", '
        yield b'"deltas": {"FPGA": 1}}'

    made = requests.post(server.url + '/v1/reservations', data=chunks(),
                         headers=dict(SERVICE, **{
                             'Content-Type': 'application/json'}),
                         timeout=30)
    assert made.status_code == 201, made.text
    # A body of exactly the limit is served.
    padded = requests.post(
        server.url + '/v1/reservations', headers=dict(SERVICE, **{
            'Content-Type': 'application/json'}),
        data=b'{"project_id": "p1", "deltas": {"FPGA": 1}}'.ljust(LIMIT),
        timeout=30)
    assert padded.status_code == 201, padded.text
