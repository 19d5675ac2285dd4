"""Shared check: the migrated schema matches the SQLAlchemy models."""

import importlib
import pkgutil

from alembic import autogenerate
from alembic import migration as alembic_migration

import cyquota.db
from cyquota.db import api as db_api
from cyquota.db import models


def import_all_models():
    """Import every cyquota.db.*models module so Base knows all tables."""
    for info in pkgutil.iter_modules(cyquota.db.__path__):
        if info.name.endswith('models'):
            importlib.import_module('cyquota.db.%s' % info.name)


def schema_differences():
    """Alembic's list of differences between the database and the models."""
    import_all_models()
    with db_api.get_engine().connect() as conn:
        context = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True})
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    # alembic's own bookkeeping table is not a model.
    return [d for d in diff
            if not (d[0] == 'remove_table' and d[1].name == 'alembic_version')]
