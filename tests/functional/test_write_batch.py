"""Writes of one transaction sent as one statement
(``cyquota.db.write_batch``) and reads run prepared
(``cyquota.db.prepared.execute``), on the real servers; the same checks
run on SQLite, one statement a write (tests/unit/test_write_batch.py)."""

import pytest

from tests.unit import test_write_batch

pytestmark = pytest.mark.parametrize('backend', ['postgresql', 'mysql'],
                                     indirect=True)


def test_a_batch_is_one_statement(backend):
    test_write_batch.check_a_batch_writes_everything(sent_at_most=1)


def test_a_value_every_row_shares_is_sent_once(backend):
    test_write_batch.check_a_value_every_row_shares_is_sent_once()


def test_a_batch_whose_check_fails_writes_nothing(backend):
    test_write_batch.check_a_failed_check_writes_nothing()


def test_a_prepared_read_answers_as_a_plain_one(backend):
    test_write_batch.check_a_prepared_read_answers_as_a_plain_one()
