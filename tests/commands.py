"""A console script's ``main(argv)`` run in the test's own process, as a
process of its own runs it: its exit code, stdout and stderr captured,
and what its start-up sets in the process it thinks it owns (the parsed
configuration, the root logger's handlers, the loggers' levels, the
database engine) put back after.

For tests whose subject is what a command does, not its process: a call
takes milliseconds where a new process spends over a second importing.
A test of start-up, signals or exit as a process starts a real one.
"""

import contextlib
import io
import logging
import subprocess
import sys

from oslo_config import cfg
from oslo_log import log

from cyquota.cmd import manage as manage_cmd
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota import quota


def run(main, argv):
    """``main(argv)`` run as a process: a ``subprocess.CompletedProcess``
    of its exit code, stdout and stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with _process_state(), contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code
    if isinstance(code, str):
        # sys.exit(message): the interpreter prints it, exit code 1.
        stderr.write(code + '\n')
        code = 1
    return subprocess.CompletedProcess(argv, code or 0, stdout.getvalue(),
                                       stderr.getvalue())


def manage(config, *args):
    """``cyquota-manage --config-file config *args`` run in this process
    (:func:`run`)."""
    return run(manage_cmd.main, ['--config-file', str(config), *args])


def _parse():
    """``CONF`` parsed with no arguments, as ``tests/conftest.py`` parses
    it, less each required option without a value: those of an auth
    plugin that a test or a command registered for the auth_type it set,
    which a new process would not know (and could not parse without)."""
    while True:
        CONF.clear()
        try:
            CONF([], project='cyquota', default_config_files=[])
            return
        except cfg.RequiredOptError as error:
            CONF.clear()  # oslo.config unregisters only before parsing
            CONF.unregister_opt(cfg.Opt(error.opt_name), error.group)


def _loggers():
    root = logging.getLogger()
    return [root] + [logger for logger in root.manager.loggerDict.values()
                     if isinstance(logger, logging.Logger)]


@contextlib.contextmanager
def _process_state():
    root = logging.getLogger()
    handlers = root.handlers[:]
    levels = {logger: logger.level for logger in _loggers()}
    excepthook = sys.excepthook
    # As in a new process: no option a test left without a value,
    # nothing parsed, no engine, no ledger built.
    _parse()
    CONF.clear()
    log.register_options(CONF)  # as start-up does (idempotent)
    # Start-up sets both defaults (service.prepare_service(cli=True)).
    log_levels = CONF.default_log_levels
    db_api.reset()
    quota.QUOTAS.reset()
    try:
        yield
    finally:
        CONF.clear_default('use_stderr')
        log.set_defaults(default_log_levels=log_levels)
        _parse()
        db_api.reset()
        quota.QUOTAS.reset()
        root.handlers[:] = handlers
        for logger in _loggers():
            logger.setLevel(levels.get(logger, logging.NOTSET))
        sys.excepthook = excepthook
