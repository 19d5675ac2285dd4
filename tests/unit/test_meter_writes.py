"""Every UPDATE of ``quota_usages`` that the ledger builds and that
changes ``used`` or ``leased`` moves the row's meter first, in the same
write (``cyquota.db.meter.advance``), as each server's dialect compiles
it (no server needed): the steps of every path and the one statements of
PostgreSQL and MariaDB. The model test (``tests.ledger_machine``) holds
every statement it sees run to the same rule, on every backend."""

import pytest
import sqlalchemy as sa

from cyquota.db import models
from cyquota.placement import claim_steps
from cyquota.quota.ledger import one_statement
from cyquota.quota.ledger import statements as sql
from tests import ledger_model
from tests.unit.test_ledger_binds import _DIALECTS

_LIMIT = sa.cast(sa.bindparam('_limit'), sa.BigInteger)


def _texts(server):
    """The SQL of the ledger's statements that write usage rows, as
    ``server`` runs them."""
    dialect = _DIALECTS[server]()
    texts = [str(statement.compile(dialect=dialect)) for statement in (
        sql.WRITE_USAGE, sql.END_RESERVED, sql.reserve_if_fits(_LIMIT))]
    if server in ('postgresql', 'mariadb'):
        for count in (1, 2, 4):
            for request_id in (False, True):
                texts.append(one_statement.reserve(
                    dialect, _LIMIT, count, request_id).prepared.text)
            for target in (models.COMMITTED, models.ROLLED_BACK):
                texts.append(one_statement.end(target, count,
                                               dialect).prepared.text)
        texts.append(one_statement.claiming_reserve(
            dialect, _LIMIT, False, claim_steps).prepared.text)
    return texts


@pytest.mark.parametrize('server', sorted(_DIALECTS))
def test_every_write_of_used_or_leased_moves_the_meter_first(server):
    texts = _texts(server)
    assert [ledger_model.unmetered_writes(text) for text in texts] == [
        []] * len(texts)
    # Not for want of finding them: the steps' and the commits' writes
    # of used are seen.
    moved = [text for text in texts
             if 'used=' in ''.join(ledger_model._USAGE_UPDATE.findall(text))]
    assert len(moved) >= (2 if server == 'sqlite' else 5)


def test_a_write_of_used_without_the_meter_is_found():
    assert ledger_model.unmetered_writes(
        'UPDATE quota_usages SET used=?, updated_at=? WHERE id = ?')
    assert ledger_model.unmetered_writes(
        'WITH c AS (UPDATE quota_usages SET reserved=(reserved - 1), '
        'used=(used + 1) FROM locked WHERE id = locked.id) SELECT 1')
    # The meter after the counts: MariaDB would meter the new ones.
    assert ledger_model.unmetered_writes(
        'UPDATE quota_usages FORCE INDEX (u) SET leased=1, metered_mark=2, '
        'metered=3, metered_at=4, marked_period=5 WHERE id = 1')
    assert not ledger_model.unmetered_writes(
        'UPDATE quota_usages SET reserved=(reserved + 1) WHERE used >= 1')
