"""The WSGI app of the example policy service.

``POST /check-create``, ``POST /check-update``: 204 to allow, 403
``{"message": "..."}`` to refuse. ``POST /on-end``: 204. ``GET
/projects/<project_id>``: the project's budget and charges in the window.
With a token configured, every request must carry it in ``X-Auth-Token``
(401 otherwise). A body that is not a cyquota document: 400.
"""

import hmac
import json
import logging

import webob

from cyquota.policy_example import policy

LOG = logging.getLogger(__name__)


def _json(status, document):
    return webob.Response(status=status, json_body=document,
                          charset='UTF-8')


def _message(status, message):
    return _json(status, {'message': message})


def _document(request, fields):
    """The request's JSON object with ``fields``."""
    try:
        document = json.loads(request.body)
    except ValueError:
        raise policy.InvalidDocument('the body is not JSON') from None
    if not isinstance(document, dict):
        raise policy.InvalidDocument('the body must be a JSON object')
    missing = [field for field in fields if field not in document]
    if missing:
        raise policy.InvalidDocument('the body has no %s'
                                     % ', '.join(missing))
    return [document[field] for field in fields]


class PolicyApp:
    """Serve an :class:`~cyquota.policy_example.policy.AcceleratorHoursPolicy`.

    :param token: the token callers must send in ``X-Auth-Token``; None
        accepts every caller.
    """

    def __init__(self, accelerator_policy, token=None):
        self.policy = accelerator_policy
        self.token = token

    def __call__(self, environ, start_response):
        request = webob.Request(environ)
        try:
            response = self._handle(request)
        except policy.InvalidDocument as error:
            LOG.warning('%s %s: bad request: %s', request.method,
                        request.path, error)
            response = _message(400, 'Invalid request: %s' % error)
        return response(environ, start_response)

    def _authorized(self, request):
        if self.token is None:
            return True
        sent = request.headers.get('X-Auth-Token', '')
        return hmac.compare_digest(sent.encode(), self.token.encode())

    def _handle(self, request):
        if not self._authorized(request):
            LOG.warning('%s %s from %s: missing or wrong X-Auth-Token',
                        request.method, request.path, request.remote_addr)
            return _message(401, 'A valid X-Auth-Token is required.')
        path = request.path_info.rstrip('/')
        checks = {'/check-create': ('context', 'lease'),
                  '/check-update': ('context', 'current_lease', 'lease'),
                  '/on-end': ('context', 'lease')}
        if path in checks:
            if request.method != 'POST':
                return _message(405, 'Use POST.')
            arguments = _document(request, checks[path])
            if path == '/on-end':
                self.policy.on_end(*arguments)
                return webob.Response(status=204)
            if path == '/check-create':
                decision = self.policy.check_create(*arguments)
            else:
                decision = self.policy.check_update(*arguments)
            if decision.allowed:
                return webob.Response(status=204)
            return _message(403, decision.message)
        if path.startswith('/projects/') and path.count('/') == 2:
            if request.method != 'GET':
                return _message(405, 'Use GET.')
            return _json(200, self.policy.usage(path[len('/projects/'):]))
        return _message(404, 'Not found: %s' % request.path)
