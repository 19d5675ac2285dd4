"""[database] options: oslo.db's, with the embedded default of a SQLite
file."""

from oslo_config import cfg
from oslo_db import options as db_options

#: The embedded default: a SQLite file in the current directory.
DEFAULT_CONNECTION = 'sqlite:///cyquota.sqlite'


def register_opts(conf):
    conf.register_opts(db_options.database_opts, group='database')
    # On the option objects, so the sample config shows the default too.
    cfg.set_defaults(db_options.database_opts, connection=DEFAULT_CONNECTION)
