"""Column types shared by every table and migration."""

import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

#: Naive UTC timestamps with microseconds on every backend: MySQL's and
#: MariaDB's DATETIME keeps whole seconds unless told otherwise, which
#: would let a reservation expire up to a second early.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def seconds(start, end):
    """A window's length in whole seconds, rounded up."""
    return -((start - end) // datetime.timedelta(seconds=1))


def window_span(context):
    """The default of a calendar row's ``span``: ``seconds`` of its
    window."""
    row = context.get_current_parameters()
    return seconds(row['start_date'], row['end_date'])


def span_column():
    """``span``: the window's length, so that the calendar bounds a read
    of the windows overlapping another by the longest pending one."""
    # Seconds to a date decades ahead pass 32 bits.
    return sa.Column(sa.BigInteger, nullable=False, default=window_span,
                     server_default='0')
