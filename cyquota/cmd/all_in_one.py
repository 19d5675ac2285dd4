"""cyquota-all-in-one: the embedded quick start in one process.

    cyquota-all-in-one [--config-file FILE] [--host H] [--port P]

Runs the REST API, a conductor (RPC server and periodic expiry and purge)
and brings a SQLite database's schema up to date first (creating the
file); any other database must have been migrated (``cyquota-manage db
sync``). With no config file it uses the embedded defaults: a SQLite file
``cyquota.sqlite`` in the current directory, in-process RPC (``fake://``),
the local limit source, noauth. With one, it honours ``[database]
connection`` and every other option.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from cyquota.cmd import api as api_cmd
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-all-in-one'

_cli_opts = [
    cfg.HostAddressOpt('host', help='Address the API listens on (default '
                                    '[api] host).'),
    cfg.PortOpt('port', help='Port the API listens on (default [api] '
                             'port).'),
]


def main(argv=None):
    """Entry point of ``cyquota-all-in-one``."""
    CONF.register_cli_opts(_cli_opts)
    # No implicit /etc/cyquota/cyquota.conf: without --config-file this is
    # the embedded default, whatever else is installed on the machine.
    service.prepare_service(
        argv, default_config_files=[], prog=PROG,
        description='The REST API, a conductor and the periodic work in '
                    'one process (the embedded quick start).')
    for name in ('host', 'port'):
        if CONF[name] is not None:
            CONF.set_override(name, CONF[name], 'api')
    service.check_database(migrate_sqlite=True)
    LOG.info('Database %s at revision(s) %s', db_api.shown_url(),
             ', '.join(migration.version()))
    conductor = conductor_service.ConductorService()
    conductor.start()
    try:
        api_cmd.serve()
    finally:
        conductor.stop()
        conductor.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
