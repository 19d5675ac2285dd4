"""ExternalServiceFilter: delegate each decision to an HTTP service.

The service gets a JSON POST per call, with the static token of
``[enforcement_external] token`` in ``X-Auth-Token``:

* ``check-create``: ``{"context": ..., "lease": ...}``
* ``check-update``: ``{"context": ..., "current_lease": ..., "lease": ...}``
* ``on-end``: ``{"context": ..., "lease": ...}``

It answers 204 to allow, or 403 with ``{"message": "..."}`` to refuse. Any
other answer, and any transport error, refuses unless ``allow_on_error``;
the user then gets a generic message, never the service's body. On-end
cannot refuse anything: its errors are logged only. ``timeout`` is the
deadline of the whole call, connect to last byte (:mod:`.deadline`).
"""

import collections
import json
import os
import threading
import time

from oslo_log import log as logging
import requests

from cyquota.enforcement import base
from cyquota.enforcement import deadline
from cyquota import exception
from cyquota.redaction import mask_url

LOG = logging.getLogger(__name__)

CHECK_CREATE = 'check-create'
CHECK_UPDATE = 'check-update'
ON_END = 'on-end'

#: The longest 403 body read for its message; the rest is ignored.
MAX_MESSAGE_BODY = 64 * 1024

GENERIC_REFUSAL = 'The usage enforcement service refused the request.'
ERROR_REFUSAL = ('The usage enforcement service could not decide (%s); the '
                 'request is refused.')


def _endpoint(base_url, override, call):
    if override:
        return override
    if base_url:
        return '%s/%s' % (base_url.rstrip('/'), call)
    return None


class Answer(collections.namedtuple(
        'Answer', ['status', 'message', 'error', 'seconds'])):
    """The outcome of one POST. ``status``: the HTTP status, None after a
    transport error. ``message``: a 403's refusal message, None without a
    usable one. ``error``: a short description of a transport error."""

    def describe(self):
        """What happened, for users and logs (never the service's body)."""
        return self.error if self.status is None else 'HTTP %d' % self.status


def _transport_error_kind(error):
    if isinstance(error, requests.exceptions.SSLError):
        return 'TLS error'
    if isinstance(error, requests.exceptions.Timeout):
        return 'timeout'
    if isinstance(error, requests.exceptions.ConnectionError):
        return 'connection error'
    return 'request error'


def _refusal_message(response):
    """The string ``message`` of a 403's JSON object body, else None."""
    body = b''
    # iter_content turns a read error into a requests exception.
    for chunk in response.iter_content(8192):
        body += chunk
        if len(body) >= MAX_MESSAGE_BODY:
            break
    try:
        document = json.loads(body)
    except ValueError:
        return None
    message = document.get('message') if isinstance(document, dict) else None
    return message if isinstance(message, str) and message else None


class ExternalServiceFilter(base.BaseFilter):
    """Ask the HTTP service of ``[enforcement_external]`` for each decision.

    :raises base.ConfigError: no endpoint is configured, or ``ca_file`` is
        not a file.
    """

    name = 'ExternalServiceFilter'

    def __init__(self, conf=None):
        super().__init__(conf)
        options = self.conf.enforcement_external
        self.endpoints = {
            CHECK_CREATE: _endpoint(options.endpoint_url,
                                    options.check_create_endpoint,
                                    CHECK_CREATE),
            CHECK_UPDATE: _endpoint(options.endpoint_url,
                                    options.check_update_endpoint,
                                    CHECK_UPDATE),
            ON_END: _endpoint(options.endpoint_url, options.on_end_endpoint,
                              ON_END),
        }
        if not any(self.endpoints.values()):
            raise base.ConfigError(
                'ExternalServiceFilter is enabled but has no endpoint: set '
                '[enforcement_external] endpoint_url (or check_create_'
                'endpoint, check_update_endpoint, on_end_endpoint)')
        if options.ca_file and not os.path.isfile(options.ca_file):
            raise base.ConfigError(
                '[enforcement_external] ca_file %s is not a file'
                % options.ca_file)
        self._verify = options.ca_file or True
        self._timeout = options.timeout
        self._allow_on_error = options.allow_on_error
        self._headers = {'Content-Type': 'application/json'}
        if options.token:
            self._headers['X-Auth-Token'] = options.token
        # One session (connection pool) per thread: requests does not
        # promise that a Session is safe to share between threads.
        self._local = threading.local()

    def check_create(self, context, lease):
        self._check(CHECK_CREATE, {'context': context, 'lease': lease})

    def check_update(self, context, current_lease, lease):
        self._check(CHECK_UPDATE, {'context': context,
                                   'current_lease': current_lease,
                                   'lease': lease})

    def on_end(self, context, lease):
        """Notify the service; its answer and errors are only logged."""
        url = self.endpoints[ON_END]
        if url is None:
            return
        answer = self._post(url, {'context': context, 'lease': lease})
        if answer.status == 204:
            LOG.info('%s on-end of lease %s: POST %s -> 204 in %.3fs',
                     self.name, base.current_lease_id(), mask_url(url),
                     answer.seconds)
        else:
            LOG.warning('%s on-end of lease %s: POST %s -> %s in %.3fs '
                        '(ignored: the lease has ended)', self.name,
                        base.current_lease_id(), mask_url(url),
                        answer.describe(), answer.seconds)

    def _check(self, call, document):
        url = self.endpoints[call]
        lease_id = base.current_lease_id()
        if url is None:
            LOG.debug('%s %s of lease %s: no endpoint configured, allowed',
                      self.name, call, lease_id)
            return
        answer = self._post(url, document)
        url = mask_url(url)
        if answer.status == 204:
            LOG.info('%s %s of lease %s: POST %s -> 204 in %.3fs: allowed',
                     self.name, call, lease_id, url, answer.seconds)
            return
        if answer.status == 403:
            LOG.info('%s %s of lease %s: POST %s -> 403 in %.3fs: refused: '
                     '%s', self.name, call, lease_id, url, answer.seconds,
                     answer.message or '(no message)')
            self.deny(answer.message or GENERIC_REFUSAL)
        if self._allow_on_error:
            LOG.warning('%s %s of lease %s: POST %s -> %s in %.3fs: allowed '
                        '(allow_on_error is set)', self.name, call,
                        lease_id, url, answer.describe(), answer.seconds)
            return
        LOG.warning('%s %s of lease %s: POST %s -> %s in %.3fs: refused',
                    self.name, call, lease_id, url, answer.describe(),
                    answer.seconds)
        # Undecided, not denied: a create refused so leaves no ERROR lease.
        raise exception.EnforcementUnavailable(
            filter=self.name, reason=ERROR_REFUSAL % answer.describe())

    def _post(self, url, document):
        """POST ``document`` to ``url``: its :class:`Answer`, within
        ``timeout`` seconds from connect to last byte."""
        started = time.monotonic()
        with deadline.Deadline(self._timeout) as limit:
            try:
                with self._session().post(
                        url, data=json.dumps(document), headers=self._headers,
                        timeout=(self._timeout, self._timeout),
                        verify=self._verify,
                        # A redirect would carry the token somewhere else.
                        allow_redirects=False, stream=True) as response:
                    status = response.status_code
                    message = (_refusal_message(response)
                               if status == 403 else None)
            except (requests.RequestException, OSError) as error:
                # The error names the URL and the cause, never the headers.
                LOG.info('%s: POST %s failed: %s', self.name, mask_url(url),
                         mask_url(error))
                status, message = None, None
                kind = _transport_error_kind(error)
        seconds = time.monotonic() - started
        if limit.expired:
            # Whatever the cut left (an error, a short body), the service
            # did not answer in time.
            LOG.info('%s: POST %s: no complete answer within %gs',
                     self.name, mask_url(url), self._timeout)
            return Answer(None, None, 'timeout', seconds)
        if status is None:
            return Answer(None, None, kind, seconds)
        return Answer(status, message, None, seconds)

    def _session(self):
        session = getattr(self._local, 'session', None)
        if session is None:
            session = self._local.session = deadline.session()
        return session
