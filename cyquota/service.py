"""Start-up shared by cyquota's commands: configuration and logging."""

import sys

from oslo_log import log as logging

from cyquota.conf import CONF


def prepare_service(argv=None, default_config_files=None, cli=False):
    """Parse ``argv`` (without the program name) into ``CONF`` and set up
    oslo.log. ``cli``: a command whose stdout is its output, so its logs go
    to stderr and libraries only speak up about problems."""
    logging.register_options(CONF)  # idempotent
    if cli:
        CONF.set_default('use_stderr', True)
        logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                             + ['alembic=WARN'])
    argv = sys.argv[1:] if argv is None else argv
    CONF(argv, project='cyquota', default_config_files=default_config_files)
    logging.setup(CONF, 'cyquota')
