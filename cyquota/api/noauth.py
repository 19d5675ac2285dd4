"""The guard of ``[api] auth_strategy = noauth``, checked at every start.

noauth trusts the ``X-Project-Id``, ``X-User-Id`` and ``X-Roles`` headers
as sent: whoever reaches the API may act as an admin. It is the embedded
quick start's default, which listens on 127.0.0.1. So cyquota-api and
cyquota-all-in-one refuse to serve it on an address that is not loopback,
and the WSGI entry point, which cannot see the address a WSGI server
listens on, refuses it altogether, unless the operator sets ``[api]
allow_remote_noauth``. Every start under noauth logs a WARNING.
"""

import ipaddress
import socket

from oslo_log import log as logging

from cyquota.conf import CONF
from cyquota import service

LOG = logging.getLogger(__name__)

#: ``host`` of :func:`check` for the WSGI entry point.
WSGI_SERVER = None


def is_loopback(host):
    """Whether every address that ``host`` resolves to is a loopback
    address (a name that does not resolve is not)."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    # An IPv6 address may carry a zone (fe80::1%eth0).
    return all(ipaddress.ip_address(address[4][0].split('%')[0]).is_loopback
               for address in found)


def check(host):
    """Stop the process with one line (``service.fail``) when noauth would
    serve where others may reach it without the operator's opt-in; log
    the WARNING of a start under noauth otherwise.

    :param host: the address the API is about to listen on, or
        :data:`WSGI_SERVER` for the WSGI entry point.
    """
    if CONF.api.auth_strategy != 'noauth':
        return
    where = 'under a WSGI server' if host is WSGI_SERVER else 'on %s' % host
    if not CONF.api.allow_remote_noauth and (
            host is WSGI_SERVER or not is_loopback(host)):
        service.fail(
            '[api] auth_strategy = noauth trusts the X-Roles header of '
            'anyone who reaches the API: it serves on a loopback address '
            'only, not %s; use auth_strategy = keystone, or set [api] '
            'allow_remote_noauth = true to serve it there anyway' % where)
    LOG.warning('[api] auth_strategy = noauth %s: the X-Project-Id, '
                'X-User-Id and X-Roles headers are trusted as sent, so '
                'whoever reaches the API may act as an admin; use '
                'auth_strategy = keystone beyond the quick start', where)
