"""Alembic environment: runs on the connection that cyquota.db.migration
hands over, or on cyquota's configured engine."""

from alembic import context

from cyquota.db import api as db_api
from cyquota.db import attachment_models  # noqa: F401 (registers tables)
from cyquota.db import budget_models  # noqa: F401 (registers tables)
from cyquota.db import lease_models  # noqa: F401 (registers tables)
from cyquota.db import models
from cyquota.db import placement_models  # noqa: F401 (registers tables)

config = context.config


def run_migrations_online():
    connection = config.attributes.get('connection')
    if connection is not None:
        _run(connection)
        return
    with db_api.get_engine().connect() as connection:
        _run(connection)


def _run(connection):
    context.configure(connection=connection,
                      target_metadata=models.Base.metadata,
                      render_as_batch=connection.dialect.name == 'sqlite')
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
