"""Stand-ins for Glance and Neutron, which are not on the accelerator
path: tiny WSGI apps served from a thread of the bed's process, answering
only the calls Nova makes for a server without networks.

- Glance: ``GET /v2/schemas/image`` and ``GET /v2/images/{id}`` (any id
  is an active raw image), for the image lookup of a server create.
- Neutron: empty collections (``GET /v2.0/ports``, ``networks``, ...),
  for show and delete, which otherwise fail with ``EndpointNotFound``.
"""

import json
import socketserver
import threading
from wsgiref import simple_server

#: The image a boot names: any id would do.
IMAGE_ID = '155d900f-4e14-4e4c-a73d-069cbf4541e6'

_IMAGE_SCHEMA = {
    'name': 'image',
    'properties': {
        'id': {'type': 'string'}, 'name': {'type': ['null', 'string']},
        'status': {'type': 'string'},
        'disk_format': {'type': ['null', 'string'],
                        'enum': [None, 'raw', 'qcow2']},
        'container_format': {'type': ['null', 'string'],
                             'enum': [None, 'bare']},
    },
    'additionalProperties': {'type': 'string'},
}


def _image(image_id):
    return {'id': image_id, 'name': 'bed-image', 'status': 'active',
            'visibility': 'public', 'disk_format': 'raw',
            'container_format': 'bare', 'size': 1024, 'min_disk': 0,
            'min_ram': 0, 'protected': False, 'tags': [],
            'created_at': '2026-01-01T00:00:00Z',
            'updated_at': '2026-01-01T00:00:00Z',
            'file': '/v2/images/%s/file' % image_id,
            'self': '/v2/images/%s' % image_id, 'schema': '/v2/schemas/image'}


def glance(environ):
    """``(status, body)`` of the Glance stand-in."""
    path = environ['PATH_INFO'].rstrip('/')
    if path == '/v2/schemas/image':
        return 200, _IMAGE_SCHEMA
    if path.startswith('/v2/images/'):
        return 200, _image(path.rsplit('/', 1)[1])
    if path in ('', '/v2'):
        return 200, {'versions': [{'id': 'v2.16', 'status': 'CURRENT',
                                   'links': [{'rel': 'self',
                                              'href': _base(environ)
                                              + '/v2/'}]}]}
    return 404, {'error': 'not in the stand-in: %s' % path}


def neutron(environ):
    """``(status, body)`` of the Neutron stand-in: every collection is
    empty."""
    path = environ['PATH_INFO'].rstrip('/')
    if path in ('', '/v2.0'):
        return 200, {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                                   'links': [{'rel': 'self',
                                              'href': _base(environ)
                                              + '/v2.0/'}]}],
                     'resources': []}
    parts = path.split('/')
    if (environ['REQUEST_METHOD'] == 'GET' and len(parts) == 3
            and parts[1] == 'v2.0'):
        return 200, {parts[2]: []}
    return 404, {'NeutronError': {'message': 'not in the stand-in: %s'
                                  % path}}


def _base(environ):
    return 'http://%s' % environ['HTTP_HOST']


def _wsgi(answer):
    def application(environ, start_response):
        status, body = answer(environ)
        data = json.dumps(body).encode()
        start_response('%d %s' % (status, 'OK' if status == 200 else 'Not '
                                  'Found'),
                       [('Content-Type', 'application/json'),
                        ('Content-Length', str(len(data)))])
        return [data]
    return application


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class StandIn:
    """``answer`` (``glance`` or ``neutron``) served on 127.0.0.1:``port``
    from a daemon thread until ``stop``."""

    def __init__(self, answer, port):
        self.url = 'http://127.0.0.1:%d' % port
        self._server = simple_server.make_server(
            '127.0.0.1', port, _wsgi(answer), _Server, _Quiet)
        threading.Thread(target=self._server.serve_forever,
                         daemon=True).start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
