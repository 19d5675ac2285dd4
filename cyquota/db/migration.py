"""Schema migrations (alembic): ``cyquota-manage db sync`` and ``db
version``, and the check every service and command runs before using the
database."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from sqlalchemy import engine as sa_engine

from cyquota.conf import CONF
from cyquota.db import api as db_api

_MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')

#: What the operator runs to bring the schema up to date.
SYNC_COMMAND = 'cyquota-manage db sync'


class SchemaError(Exception):
    """The database cannot be used as it is: missing or not migrated. The
    message is one line that says what to do."""


def _config(connection):
    config = alembic_config.Config(os.path.join(_MIGRATIONS, 'alembic.ini'))
    config.set_main_option('script_location', _MIGRATIONS)
    config.attributes['connection'] = connection
    return config


def is_sqlite():
    """Whether ``[database] connection`` is a SQLite database."""
    return sa_engine.make_url(
        CONF.database.connection).get_backend_name() == 'sqlite'


def _missing_sqlite_file():
    """The absolute path of the configured SQLite file when it does not
    exist (connecting would create it, empty), else None."""
    url = sa_engine.make_url(CONF.database.connection)
    if url.get_backend_name() != 'sqlite' or url.database in (
            None, '', ':memory:') or url.database.startswith('file:'):
        return None
    path = os.path.abspath(url.database)
    return None if os.path.exists(path) else path


def upgrade(revision='heads'):
    """Bring the configured database up to ``revision`` (all heads: each
    feature's migrations form their own branch from the ledger's)."""
    with db_api.get_engine().begin() as connection:
        command.upgrade(_config(connection), revision)


def version():
    """The database's current revisions (one per branch), empty before the
    first sync; a SQLite file that does not exist is not created."""
    if _missing_sqlite_file():
        return ()
    with db_api.get_engine().connect() as connection:
        return tuple(sorted(alembic_migration.MigrationContext.configure(
            connection).get_current_heads()))


def heads():
    """The newest revision of each branch in the code."""
    script = alembic_script.ScriptDirectory.from_config(_config(None))
    return tuple(sorted(script.get_heads()))


def check_current():
    """Raise :class:`SchemaError` unless the database is at the code's
    heads; never creates a SQLite file."""
    missing = _missing_sqlite_file()
    if missing:
        raise SchemaError('database file %s does not exist: run %s'
                          % (missing, SYNC_COMMAND))
    if version() != heads():
        raise SchemaError('database not migrated: run %s' % SYNC_COMMAND)
