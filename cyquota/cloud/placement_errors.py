"""What can go wrong talking to the cloud's Placement API.

Every error is a :class:`PlacementError` with a one-line message that names
the request (method and path, never a URL with credentials nor a token) and
why it failed:

* :class:`PlacementUnreachable`: no answer (refused, timed out, no
  endpoint in the catalog, authentication failed);
* :class:`PlacementUnsupported`: Placement does not serve the microversion
  cyquota needs;
* :class:`PlacementHTTPError`: an error status, with Placement's error code
  (``errors[0].code`` of the body, such as
  ``placement.resource_provider.not_found``); its subclasses
  :class:`PlacementNotFound` (404) and :class:`PlacementConflict` (409),
  and :class:`GenerationConflict` for a 409 ``placement.concurrent_update``:
  a provider or consumer generation changed since it was read.

Every message and detail is masked (``cyquota.redaction``): they reach log
lines, a lease's ``status_reason``, the healthcheck and command output.
"""

import re

from cyquota.conf import CONF
from cyquota import redaction

#: Placement's error code of a generation conflict.
CONCURRENT_UPDATE = 'placement.concurrent_update'

_SPACES = re.compile(r'\s+')


def masked(text):
    """``text`` with every URL's password and every configured secret
    masked (``redaction.mask``)."""
    return redaction.mask(text, redaction.configured_secrets(CONF))


def one_line(text):
    """``text`` with its runs of white space (webob's detail holds new
    lines) made single spaces, masked (:func:`masked`)."""
    return masked(_SPACES.sub(' ', str(text)).strip())


class PlacementError(Exception):
    """Base class of the errors of the Placement client; its message is
    masked (:func:`masked`)."""

    def __init__(self, message):
        super().__init__(masked(message))


class PlacementUnreachable(PlacementError):
    """Placement did not answer, or could not be authenticated to."""


class PlacementUnsupported(PlacementError):
    """Placement does not serve a microversion cyquota can use."""


class PlacementHTTPError(PlacementError):
    """Placement answered with an error status.

    :ivar status: the HTTP status code.
    :ivar code: Placement's error code (``placement.undefined_code`` when
        the body has none).
    :ivar detail: Placement's explanation, on one line.
    """

    def __init__(self, method, path, status, code, detail):
        self.method = method
        self.path = path
        self.status = status
        self.code = code
        self.detail = masked(detail)
        message = 'Placement %s %s: %d %s' % (method, path, status, code)
        super().__init__('%s: %s' % (message, detail) if detail else message)


class PlacementNotFound(PlacementHTTPError):
    """404: the provider, consumer or class does not exist."""


class PlacementConflict(PlacementHTTPError):
    """409 other than a generation conflict (for example, not enough
    capacity left for an allocation, or a provider still in use)."""


class GenerationConflict(PlacementConflict):
    """409 ``placement.concurrent_update``: someone changed the provider or
    consumer since its generation was read; read again and retry."""


def http_error(method, path, status, body):
    """The :class:`PlacementHTTPError` of an error answer, ``body`` being
    its decoded JSON (or None)."""
    code, detail = 'placement.undefined_code', ''
    try:
        error = body['errors'][0]
        code = error.get('code') or code
        detail = one_line(error.get('detail') or error.get('title') or '')
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    if status == 404:
        cls = PlacementNotFound
    elif status == 409:
        cls = (GenerationConflict if code == CONCURRENT_UPDATE
               else PlacementConflict)
    else:
        cls = PlacementHTTPError
    return cls(method, path, status, code, detail)
