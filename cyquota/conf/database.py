"""[database] options: oslo.db's, with the embedded default of a SQLite file."""

from oslo_db import options as db_options

#: The embedded default: a SQLite file in the current directory.
DEFAULT_CONNECTION = 'sqlite:///cyquota.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    return db_options.list_opts()
