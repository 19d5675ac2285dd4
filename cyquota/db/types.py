"""Column types shared by every table and migration."""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

#: Naive UTC timestamps with microseconds on every backend: MySQL's and
#: MariaDB's DATETIME keeps whole seconds unless told otherwise, which
#: would let a reservation expire up to a second early.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
