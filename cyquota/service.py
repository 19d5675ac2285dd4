"""Start-up shared by cyquota's commands: configuration, logging, schema,
and the quota ledger's device hook.

A command that cannot start says why in one line on stderr, ``prog:
message``, and exits non-zero (:func:`fail`): an operator's mistake is
never a traceback. Neither that line nor any log line shows a secret of
the configuration (``cyquota.redaction``).
"""

import gc
import logging as std_logging
import os
import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.conf import validation
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import enforcement
from cyquota.cloud import lease_writeback
from cyquota.leases import events as lease_events
from cyquota.placement import quota_hook
from cyquota import quota
from cyquota import redaction


def fail(message):
    """Stop the command: ``prog: message`` on stderr, exit code 1; every
    URL's password and every configured secret in ``message`` masked."""
    prog = getattr(CONF, 'prog', None) or os.path.basename(sys.argv[0])
    sys.exit('%s: %s' % (prog, redaction.mask(
        str(message), redaction.configured_secrets(CONF))))


def _mask_logs():
    """Mask secrets in every log line that oslo.log's handlers write, as
    formatted (``redaction.MaskingFormatter``): the exception and traceback
    appended to a message included."""
    secrets = redaction.configured_secrets(CONF)
    for handler in std_logging.getLogger().handlers:
        formatter = handler.formatter
        if isinstance(formatter, redaction.MaskingFormatter):
            formatter = formatter.formatter  # set up again: new secrets
        handler.setFormatter(redaction.MaskingFormatter(formatter, secrets))


def _parse(argv, default_config_files, prog, description):
    try:
        CONF(argv, project='cyquota', prog=prog, description=description,
             default_config_files=default_config_files)
    except (cfg.ConfigFilesNotFoundError,
            cfg.ConfigFilesPermissionDeniedError) as error:
        fail('cannot read config file %s' % ', '.join(error.config_files))
    except cfg.Error as error:
        fail(error)


def prepare_service(argv=None, default_config_files=None, cli=False,
                    prog=None, description=None):
    """Parse ``argv`` (without the program name) into ``CONF``, check the
    whole configuration, set up oslo.log and give the ledger its device
    hook (:func:`connect_hooks`); stops the process with one line
    (:func:`fail`) on a configuration that cannot work.

    :param cli: a command whose stdout is its output, so its logs go to
        stderr and libraries only speak up about problems.
    :param prog: the command's name in messages and ``--help``.
    :param description: what the command does, for ``--help``.
    """
    logging.register_options(CONF)  # idempotent
    if cli:
        CONF.set_default('use_stderr', True)
        logging.set_defaults(
            default_log_levels=logging.get_default_log_levels()
            + ['alembic=WARN'])
    argv = sys.argv[1:] if argv is None else argv
    _parse(argv, default_config_files, prog, description)
    try:
        validation.validate(CONF)
        if cli:
            # Quietly, before logging: a command's output is its own.
            enforcement.load_chain(CONF)
    except (validation.InvalidOption, enforcement.ConfigError) as error:
        fail(error)
    logging.setup(CONF, 'cyquota')
    _mask_logs()
    connect_hooks()
    if not cli:
        try:
            enforcement.check_config(CONF)
        except enforcement.ConfigError as error:
            fail(error)


def connect_hooks():
    """Give the quota ledger its device hook, devices chosen by cyquota's
    own device model (``placement/quota_hook.py``), and the lease events
    their listener, the cloud's write-back (``cloud/lease_writeback.py``).
    Start-up is the one place that knows both sides of each: the ledger
    imports nothing of ``cyquota.placement`` nor device selection of the
    ledger, and no lease room imports the cloud."""
    quota.QUOTAS.use_devices(quota_hook.DeviceHook())
    lease_events.listen(lease_writeback)


def check_database(migrate_sqlite=False):
    """Stop with one line (:func:`fail`) unless the configured database
    exists, answers and has the code's schema.

    :param migrate_sqlite: bring a SQLite database up to date (creating its
        file) instead: the embedded quick start owns its file.
    """
    try:
        if migrate_sqlite and migration.is_sqlite():
            migration.upgrade()
        else:
            migration.check_current()
    except migration.SchemaError as error:
        fail(error)
    except (db_exc.DBError, sa.exc.SQLAlchemyError) as error:
        # oslo.db raises a failed first connection untranslated when it
        # does not know its message (libpq 14's refusal, a bad port).
        fail('cannot use the database %s: %s' % (
            db_api.shown_url(), str(error).strip().splitlines()[0]))


def freeze_start_up():
    """Exempt what start-up made from the garbage collector's full
    collections, once a service is set up and about to serve.

    Modules, configuration, the WSGI app and the database engine live as
    long as the process. Left to the collector, each full collection walks
    all of them (about 165,000 objects: some 80 ms, a pause that every
    request in flight waits out, the p99 of a loaded API); frozen, it walks
    only what was made since (1-4 ms). In a process that forks workers
    afterwards, the frozen pages also stay shared.
    """
    gc.freeze()
