"""Schema migrations (alembic): ``cyquota-manage db sync`` and ``db version``."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from cyquota.db import api as db_api

_MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection):
    config = alembic_config.Config(os.path.join(_MIGRATIONS, 'alembic.ini'))
    config.set_main_option('script_location', _MIGRATIONS)
    config.attributes['connection'] = connection
    return config


def upgrade(revision='heads'):
    """Bring the configured database up to ``revision`` (all heads: each
    feature's migrations form their own branch from the ledger's)."""
    with db_api.get_engine().begin() as connection:
        command.upgrade(_config(connection), revision)


def version():
    """The database's current revisions (one per branch), empty before the
    first sync."""
    with db_api.get_engine().connect() as connection:
        return tuple(sorted(alembic_migration.MigrationContext.configure(
            connection).get_current_heads()))


def heads():
    """The newest revision of each branch in the code."""
    script = alembic_script.ScriptDirectory.from_config(_config(None))
    return tuple(sorted(script.get_heads()))
