"""Start-up shared by cyquota's commands: configuration and logging."""

import sys

from oslo_log import log as logging

from cyquota.conf import CONF


def prepare_service(argv=None, default_config_files=None):
    """Parse ``argv`` (without the program name) into ``CONF`` and set up
    oslo.log."""
    logging.register_options(CONF)  # idempotent
    argv = sys.argv[1:] if argv is None else argv
    CONF(argv, project='cyquota', default_config_files=default_config_files)
    logging.setup(CONF, 'cyquota')
