"""The marker of a paginated list: the row a page starts after, as
OpenStack APIs name it (``?marker=<id of the previous page's last>``)."""

import re

from cyquota import exception

#: What an id can be: a marker that cannot is no row's (and is not sent to
#: a database, which might refuse its text).
_ID = re.compile(r'[\x21-\x7e]{1,36}')


def find(conn, marker, query_of):
    """The row ``query_of(marker)`` (a select of the marker's row, within
    what the caller may list) reads; InvalidQuery (400) when there is none
    or ``marker`` cannot be an id."""
    found = None
    if _ID.fullmatch(marker):
        found = conn.execute(query_of(marker)).first()
    if found is None:
        raise exception.InvalidQuery(detail='marker [%s] not found' % marker)
    return found
