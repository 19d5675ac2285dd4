"""Reads after a row lock must see everything committed under it: cyquota's
transactions run READ COMMITTED on both real servers (see the locking
discipline in cyquota/quota/ledger/__init__.py)."""

import sqlalchemy as sa

from cyquota.db import api as db_api

_QUERY = {
    'postgresql': 'SHOW transaction_isolation',
    'mysql': 'SELECT @@tx_isolation',
}


def test_transactions_are_read_committed(backend, ctx):
    for transaction in (db_api.writer, db_api.reader):
        with transaction(ctx) as session:
            level = session.execute(sa.text(_QUERY[backend])).scalar()
        assert level.replace('-', ' ').lower() == 'read committed'
