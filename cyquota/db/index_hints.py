"""The index a read must range over, named to the servers whose planners
leave it otherwise: the one place a dialect's hint is written."""

#: The servers that take ``FORCE INDEX``: a plan chosen from statistics
#: there can sort a whole table, or range over another index, where the
#: named one bounds the read.
_FORCING = ('mysql', 'mariadb')


def force_index(query, table, index):
    """``query`` (a select) reading ``table`` through ``index`` on MySQL
    and MariaDB; unchanged on the other servers, whose plans take it."""
    for dialect in _FORCING:
        query = query.with_hint(table, 'FORCE INDEX (%s)' % index, dialect)
    return query
