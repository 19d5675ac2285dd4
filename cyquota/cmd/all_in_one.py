"""cyquota-all-in-one: the embedded quick start in one process.

    cyquota-all-in-one [--config-file FILE] [--host H] [--port P]

Runs the REST API (and the ``[metrics] listen`` listener, when set), a
conductor (RPC server and periodic expiry and purge) and brings a SQLite
database's schema up to date first (creating the file); any other database
must have been migrated (``cyquota-manage db sync``). With no config file
it uses the embedded defaults: a SQLite file ``cyquota.sqlite`` in the
current directory, in-process RPC (``fake://``), the local limit source,
noauth on 127.0.0.1 (noauth serves on a loopback address only, unless
``[api] allow_remote_noauth`` is set). With one, it honours ``[database]
connection`` and every other option.
"""

import signal
import sys

from oslo_log import log as logging

from cyquota.cmd import api as api_cmd
from cyquota.conductor import service as conductor_service
from cyquota.conf import api as api_conf
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import service

LOG = logging.getLogger(__name__)

PROG = 'cyquota-all-in-one'


def main(argv=None):
    """Entry point of ``cyquota-all-in-one``."""
    api_conf.register_cli_opts(CONF)
    # No implicit /etc/cyquota/cyquota.conf: without --config-file this is
    # the embedded default, whatever else is installed on the machine.
    service.prepare_service(
        argv, default_config_files=[], prog=PROG,
        description='The REST API, a conductor and the periodic work in '
                    'one process (the embedded quick start).')
    api_conf.apply_cli_opts(CONF)
    api_cmd.check_start_up()
    service.check_database(migrate_sqlite=True)
    LOG.info('Database %s at revision(s) %s', db_api.shown_url(),
             ', '.join(migration.version()))
    # Until the API serves, a signal stops the process at once: the
    # conductor may be retrying a broker that does not answer.
    signal.signal(signal.SIGTERM, api_cmd.stop)
    signal.signal(signal.SIGINT, api_cmd.stop)
    conductor = conductor_service.ConductorService()
    try:
        conductor.start()
    except conductor_service.StartError as error:
        service.fail(error)
    try:
        api_cmd.serve()
    finally:
        conductor.stop()
        conductor.wait(conductor_service.STOP_TIMEOUT)
    return 0


if __name__ == '__main__':
    sys.exit(main())
