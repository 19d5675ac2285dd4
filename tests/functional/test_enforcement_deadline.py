"""ExternalServiceFilter's ``timeout`` is the deadline of the whole call:
real servers on 127.0.0.1 (plain and TLS) that drip their headers or their
403 body a byte at a time never hold a request past it."""

import logging
import socketserver
import ssl
import threading
import time

import pytest
import trustme

from cyquota.enforcement import chain
from cyquota.enforcement import external_service
from cyquota import exception
from tests import enforcement_helpers as helpers

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 0.5
#: What a call may take beyond the timeout.
MARGIN = 0.5
#: Each byte comes this long after the previous one: well within a read
#: timeout, so only a deadline of the whole call can stop the drip.
DRIP = 0.05
HEADERS = (b'HTTP/1.1 204 No Content\r\n' + b'X-Padding: %s\r\n' % (
    b'x' * 200) + b'\r\n')
BODY = b'{"message": "%s"}' % (b'no ' * 100)
FORBIDDEN = (b'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n'
             b'Content-Length: %d\r\n\r\n' % len(BODY))
# Answers after which the server closes the connection: http.client then
# hands the socket over to the response, and the connection has none left.
FORBIDDEN_HTTP10 = (b'HTTP/1.0 403 Forbidden\r\n'
                    b'Content-Type: application/json\r\n\r\n')
FORBIDDEN_CLOSE = (b'HTTP/1.1 403 Forbidden\r\nConnection: close\r\n'
                   b'Content-Type: application/json\r\n'
                   b'Content-Length: %d\r\n\r\n' % len(BODY))


class DrippingServer:
    """Reads a request, sends ``head`` at once, then ``drip`` one byte
    every DRIP seconds; ``url`` is its address on 127.0.0.1."""

    def __init__(self, head, drip, ssl_context=None):
        stop = self.stop_event = threading.Event()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                # The whole request, its body too: closing on unread
                # bytes would reset the connection under the answer.
                received = b''
                while b'\r\n\r\n' not in received:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    received += chunk
                head_lines, _, body = received.partition(b'\r\n\r\n')
                length = next((int(value) for name, _, value in (
                    line.partition(b':')
                    for line in head_lines.split(b'\r\n')[1:])
                    if name.strip().lower() == b'content-length'), 0)
                while len(body) < length:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    body += chunk
                try:
                    self.request.sendall(head)
                    for index in range(len(drip)):
                        if stop.wait(DRIP):
                            return
                        self.request.sendall(drip[index:index + 1])
                except OSError:
                    pass  # the client hung up: what the deadline does

        server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), Handler)
        server.daemon_threads = True
        if ssl_context is not None:
            server.socket = ssl_context.wrap_socket(server.socket,
                                                    server_side=True)
        self._threaded = helpers.ThreadedServer(
            server, 'https' if ssl_context else 'http')
        self.url = self._threaded.url

    def stop(self):
        self.stop_event.set()
        self._threaded.stop()


@pytest.fixture(scope='module')
def authority():
    return trustme.CA()


@pytest.fixture(params=['http', 'https'])
def scheme(request):
    return request.param


@pytest.fixture
def serve(scheme, authority, tmp_path):
    """Start DrippingServers of the test's scheme; returns ``(url,
    ca_file)``."""
    started = []
    ca_file = tmp_path / 'ca.pem'
    authority.cert_pem.write_to_path(str(ca_file))
    server_context = None
    if scheme == 'https':
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        authority.issue_cert('127.0.0.1').configure_cert(server_context)

    def start(head, drip):
        server = DrippingServer(head, drip, server_context)
        started.append(server)
        return server.url

    yield start, str(ca_file)
    for server in started:
        server.stop()


def make_filter(tmp_path, url, ca_file, allow_on_error=False):
    return external_service.ExternalServiceFilter(helpers.make_conf(
        tmp_path, {'enforcement_external': {
            'endpoint_url': url, 'timeout': str(TIMEOUT), 'ca_file': ca_file,
            'allow_on_error': str(allow_on_error)}}))


def timed_check(service_filter):
    """(the denial or None, seconds) of one check-create."""
    started = time.monotonic()
    try:
        chain.FilterChain([service_filter]).check_create(
            helpers.request_context(), helpers.lease_document(), 'lease-1')
    except exception.EnforcementDenied as denied:
        return denied.message, time.monotonic() - started
    return None, time.monotonic() - started


@pytest.mark.parametrize('head, drip', [
    (b'', HEADERS), (FORBIDDEN, BODY), (FORBIDDEN_HTTP10, BODY),
    (FORBIDDEN_CLOSE, BODY)],
    ids=['headers', 'body', 'body-http10', 'body-connection-close'])
def test_a_dripping_service_is_cut_at_the_timeout(tmp_path, serve, head,
                                                  drip, caplog):
    caplog.set_level(logging.INFO)
    start, ca_file = serve
    service_filter = make_filter(tmp_path, start(head, drip), ca_file)
    denial, seconds = timed_check(service_filter)
    # The whole drip would last several seconds.
    assert len(drip) * DRIP > 10 * TIMEOUT
    assert seconds < TIMEOUT + MARGIN
    assert denial == ('The usage enforcement service could not decide '
                      '(timeout); the request is refused.')
    assert 'no complete answer within 0.5s' in caplog.text


def test_allow_on_error_allows_a_dripping_service(tmp_path, serve):
    start, ca_file = serve
    denial, seconds = timed_check(make_filter(
        tmp_path, start(FORBIDDEN, BODY), ca_file, allow_on_error=True))
    assert denial is None and seconds < TIMEOUT + MARGIN


def quick_refusal(message):
    body = b'{"message": "%s"}' % message
    # The server closes after each answer: saying so keeps the client
    # from sending the next call on a connection about to be closed.
    return (b'HTTP/1.1 403 Forbidden\r\nConnection: close\r\n'
            b'Content-Length: %d\r\n\r\n' % len(body)) + body


def test_the_next_call_after_a_cut_is_answered(tmp_path, serve):
    """The cut connection is not reused, and the deadline of one call does
    not reach into the next."""
    start, ca_file = serve
    service_filter = make_filter(tmp_path, start(b'', HEADERS), ca_file)
    assert 'timeout' in timed_check(service_filter)[0]
    service_filter.endpoints[external_service.CHECK_CREATE] = start(
        quick_refusal(b'quick no'), b'') + '/check-create'
    for _ in range(3):
        assert timed_check(service_filter)[0] == 'quick no'
    time.sleep(TIMEOUT + 0.1)
    assert timed_check(service_filter)[0] == 'quick no'
