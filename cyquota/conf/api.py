"""[api] options: the REST API (pecan + wsme)."""

from oslo_config import cfg

api_group = cfg.OptGroup(
    'api', title='REST API options',
    help='The cyquota REST API.')

api_opts = [
    cfg.HostAddressOpt(
        'host', default='127.0.0.1',
        help='Address the API listens on.'),
    cfg.PortOpt(
        'port', default=6780,
        help='Port the API listens on.'),
    cfg.StrOpt(
        'auth_strategy', default='noauth', choices=['noauth', 'keystone'],
        help='How API callers are authenticated: "keystone" validates '
             'tokens with keystonemiddleware\'s auth_token (configured in '
             '[keystone_authtoken]); "noauth", the embedded default, trusts '
             'the X-Project-Id, X-User-Id and X-Roles headers as sent, so '
             'anyone who reaches the API may act as an admin. noauth '
             'serves on a loopback address only (see allow_remote_noauth) '
             'and logs a WARNING at every start.'),
    cfg.BoolOpt(
        'allow_remote_noauth', default=False,
        help='Let auth_strategy = noauth serve where others may reach it: '
             'cyquota-api and cyquota-all-in-one on an address that is not '
             'loopback (0.0.0.0, a host\'s address), and the WSGI entry '
             'point cyquota.api.wsgi:application at all, since under '
             'uWSGI or another WSGI server cyquota cannot see the address '
             'it is served on. Without it such a start is refused. Anyone '
             'who can reach the API is then trusted as whoever they claim '
             'to be: only for a test bed on a network of its own.'),
    cfg.IntOpt(
        'threads', default=8, min=1,
        help='Worker threads of cyquota-api\'s WSGI server (waitress), in '
             'each worker process.'),
    cfg.IntOpt(
        'connection_limit', default=500, min=1,
        help='Connections the WSGI server of cyquota-api and '
             'cyquota-all-in-one (waitress) keeps open at once, in each '
             'worker process, its own listening socket and wake-up pipe '
             'counted among them; past it, new connections wait in the '
             'listening socket\'s backlog until one closes. Each open '
             'connection holds a file descriptor: keep it below the '
             'process\'s open files limit (ulimit -n). Not used under '
             'uWSGI.'),
    cfg.IntOpt(
        'idle_timeout', default=10, min=1,
        help='Seconds the WSGI server of cyquota-api and '
             'cyquota-all-in-one (waitress) keeps a connection open with no '
             'request in progress and nothing received or sent (a client '
             'that connected and sends nothing, an idle keep-alive '
             'connection) before closing it, so that idle connections '
             'cannot hold every place of connection_limit for long. Not '
             'used under uWSGI.'),
    cfg.IntOpt(
        'workers', default=1, min=1,
        help='Processes of cyquota-api serving one listening socket, each '
             'with its own database connections; more than one lets the '
             'API use several cores. cyquota-api --workers overrides it; '
             'cyquota-all-in-one always runs one.'),
    cfg.IntOpt(
        'max_request_body_size', default=1048576, min=1,
        help='Largest request body accepted, in bytes, on every route: a '
             'body announced larger (Content-Length) is refused with 413 '
             'before any of it is read, a chunked one as soon as it passes '
             'the limit. Under uWSGI set limit-post to the same value.'),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help='Largest page of GET /v1/leases and GET /v1/reservations, '
             'and their page size when the request gives no limit: a '
             'larger limit is lowered to it, as Nova does with its '
             'max_limit. A full page links to the next one.'),
]

#: ``--host`` and ``--port`` of cyquota-api and cyquota-all-in-one.
cli_opts = [
    cfg.HostAddressOpt(
        'host', help='Address the API listens on (default [api] host).'),
    cfg.PortOpt(
        'port', help='Port the API listens on (default [api] port).'),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def register_cli_opts(conf):
    """Register ``--host`` and ``--port`` (before parsing the command
    line)."""
    conf.register_cli_opts(cli_opts)


def apply_cli_opts(conf):
    """Let ``--host`` and ``--port``, when given, override ``[api] host``
    and ``[api] port`` (after parsing)."""
    for opt in cli_opts:
        if conf[opt.dest] is not None:
            conf.set_override(opt.dest, conf[opt.dest], api_group)


def list_opts():
    return {api_group: api_opts}
