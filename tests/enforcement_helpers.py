"""Helpers of the usage-enforcement tests: a private parsed configuration,
request contexts and lease documents, and real HTTP servers on 127.0.0.1
in threads."""

import configparser
import contextlib
import datetime
import http.server
import socketserver
import threading
from wsgiref import simple_server

from oslo_config import cfg

from cyquota.conf import enforcement as enforcement_conf
from cyquota import context as cyquota_context
from cyquota.enforcement import payload

UTC = datetime.timezone.utc
START = datetime.datetime(2030, 5, 13, tzinfo=UTC)


def make_conf(directory, sections=None):
    """A ConfigOpts with the enforcement options, parsed from a config file
    holding ``sections`` ({section: {option: value}}), as a service would
    read it (deprecated names work only this way)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_dict(sections or {})
    path = directory / ('enforcement-%d.conf' % len(list(
        directory.glob('enforcement-*.conf'))))
    with open(path, 'w') as out:
        parser.write(out)
    conf = cfg.ConfigOpts()
    enforcement_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    return conf


def request_context(project_id='project-a', user_id='user-a'):
    return cyquota_context.RequestContext(
        user_id=user_id, project_id=project_id, overwrite=False)


def context_document(project_id='project-a', user_id='user-a',
                     auth_url=None, region_name=None):
    return {'user_id': user_id, 'project_id': project_id,
            'auth_url': auth_url, 'region_name': region_name}


def lease_document(seconds=3600, amount=1, name='lease-1', start=START,
                   lease_id=None):
    """A lease document of ``amount`` FPGAs for ``seconds`` from ``start``,
    of id ``lease_id``."""
    return payload.with_lease_id(payload.lease_payload(
        name, start, start + datetime.timedelta(seconds=seconds),
        [{'resource_type': 'accelerator:FPGA', 'amount': amount,
          'member_of': [], 'member_key': None,
          'allocations': [{'id': 'rp-%d' % index,
                           'resource_provider_name': 'fpga-%d' % index,
                           'extra': {}} for index in range(amount)]}]),
        lease_id)


class ThreadedServer:
    """A server of ``socketserver`` in a daemon thread; ``url`` is its
    address on 127.0.0.1. ``stop()`` stops it."""

    def __init__(self, server, scheme='http'):
        self.server = server
        self.port = server.server_address[1]
        self.url = '%s://127.0.0.1:%d' % (scheme, self.port)
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={'poll_interval': 0.05},
            daemon=True)
        self._thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True


class _QuietWSGIRequestHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def serve_wsgi(app):
    """A WSGI app on a free port of 127.0.0.1 (:class:`ThreadedServer`)."""
    server = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=_ThreadingWSGIServer,
        handler_class=_QuietWSGIRequestHandler)
    return ThreadedServer(server)


class RecordingService:
    """A purpose-built policy service: records every request (``requests``:
    dicts of path, headers, body bytes) and answers ``answer(path)``:
    ``(status, body bytes)``, after sleeping ``delay`` seconds."""

    def __init__(self, answer=(204, b''), delay=0.0, ssl_context=None):
        self.requests = []
        self.answer = answer
        self.delay = delay
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length', 0))
                service.requests.append({
                    'path': self.path, 'headers': dict(self.headers),
                    'body': self.rfile.read(length)})
                if service.delay:
                    threading.Event().wait(service.delay)
                status, body = service.answer
                try:
                    self.send_response(status)
                    if body:
                        self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, format, *args):
                pass

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        server.daemon_threads = True
        if ssl_context is not None:
            server.socket = ssl_context.wrap_socket(server.socket,
                                                    server_side=True)
        self._threaded = ThreadedServer(
            server, 'https' if ssl_context else 'http')
        self.url = self._threaded.url

    def stop(self):
        self._threaded.stop()


@contextlib.contextmanager
def asked_by_the_leases():
    """A ``RecordingService`` that the LeaseEngine's ExternalServiceFilter
    asks (the global CONF set, the chain reloaded), for the block."""
    from cyquota.conf import CONF
    from cyquota.leases import LEASES
    recording = RecordingService()
    CONF.set_override('enabled_filters', ['ExternalServiceFilter'],
                      'enforcement')
    CONF.set_override('endpoint_url', recording.url, 'enforcement_external')
    LEASES.reset()
    try:
        yield recording
    finally:
        recording.stop()
        for name in ('enabled_filters', 'exempted_projects'):
            CONF.clear_override(name, 'enforcement')
        CONF.clear_override('endpoint_url', 'enforcement_external')
        LEASES.reset()
