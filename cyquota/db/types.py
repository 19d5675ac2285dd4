"""Column types shared by every table and migration."""

import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.ext import compiler

#: Naive UTC timestamps with microseconds on every backend: MySQL's and
#: MariaDB's DATETIME keeps whole seconds unless told otherwise, which
#: would let a reservation expire up to a second early.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


#: The collation of identifier columns on MySQL and MariaDB.
BINARY_COLLATION = 'utf8mb4_bin'


def identifier(length):
    """A column type for an identifier (a project, user, request, consumer
    or resource id, a uuid, a resource class): compared byte for byte on
    every backend. MariaDB's default collation ignores case, which would
    make ``R1`` and ``r1`` one request id and ``CaseA`` and ``casea`` one
    project; PostgreSQL and SQLite compare bytes already."""
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset='utf8mb4', collation=BINARY_COLLATION),
        'mysql', 'mariadb')


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


class read(sa.sql.functions.FunctionElement):
    """A ``DateTime`` column as a query that returns many of them selects
    it: on MySQL and MariaDB as text, for PyMySQL parses a DATETIME in
    Python (about 3 us a value, most of what a window row costs) and
    ``parsed`` does it in C; the column itself elsewhere."""

    type = DateTime
    name = 'read'
    inherit_cache = True


def parsed(value):
    """A value of a ``read`` column as a datetime."""
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


@compiler.compiles(read)
def _read(element, sql_compiler, **kw):
    return sql_compiler.process(element.clauses, **kw)


@compiler.compiles(read, 'mysql')
def _read_as_text(element, sql_compiler, **kw):
    return 'CAST(%s AS CHAR)' % sql_compiler.process(element.clauses, **kw)
