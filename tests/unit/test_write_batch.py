"""Writes of one transaction sent together (``cyquota.db.write_batch``)
and reads run prepared where the server prepares them
(``cyquota.db.prepared.execute``): on SQLite, one after the other and as
SQLAlchemy runs any; tests/functional/test_write_batch.py runs the same
checks on PostgreSQL and MariaDB, where a batch is one statement."""

import sqlalchemy as sa

from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import prepared
from cyquota.db import write_batch
from tests import fixtures

_USAGES = models.QuotaUsage.__table__


class _Stale(Exception):
    pass


def _context():
    return cyquota_context.get_admin_context()


def _rows():
    with db_api.get_engine().connect() as conn:
        return sorted(tuple(row) for row in conn.execute(sa.select(
            _USAGES.c.project_id, _USAGES.c.resource, _USAGES.c.used,
            _USAGES.c.reserved)))


def _usage(project_id, resource, used):
    return dict(project_id=project_id, resource=resource, used=used,
                reserved=0, promised=0, leased=0,
                created_at=models.utcnow())


def _first_id():
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.select(sa.func.min(_USAGES.c.id))).scalar()


def _checked_update(batch, row_id, used_was):
    """An UPDATE of the row ``row_id`` where its ``used`` is still
    ``used_was``, expected to change one row."""
    template = _USAGES.update().where(
        _USAGES.c.id == sa.bindparam('row_id'),
        _USAGES.c.used == sa.bindparam('was')).values(
            reserved=_USAGES.c.reserved + 1, updated_at=sa.bindparam('now'))
    batch.add(template, dict(row_id=row_id, was=used_was,
                             now=models.utcnow()), expect=1, error=_Stale)


def check_a_batch_writes_everything(sent_at_most):
    with db_api.get_engine().begin() as conn:
        conn.execute(_USAGES.insert(), [_usage('p1', 'FPGA', 1),
                                        _usage('p1', 'GPU', 1)])
    row_id = _first_id()
    with fixtures.statements_sent() as sent:
        with db_api.writer_connection(_context()) as conn:
            batch = write_batch.WriteBatch(conn)
            _checked_update(batch, row_id, 1)
            # A name with what a statement's text must never take as SQL.
            batch.insert(_USAGES, [_usage("p'2; --", 'FPGA', 2),
                                   _usage('p2', 'GPU', 3)])
            batch.update(_USAGES, row_id + 1,
                         dict(used=5, updated_at=models.utcnow()))
            batch.send()
            batch.send()  # Nothing left: nothing sent.
    executed = [text for text in sent if not text.startswith('PREPARE')]
    assert len(executed) <= sent_at_most + 1  # And the COMMIT, if sent.
    assert _rows() == [("p'2; --", 'FPGA', 2, 0), ('p1', 'FPGA', 1, 1),
                       ('p1', 'GPU', 5, 0), ('p2', 'GPU', 3, 0)]


def check_a_value_every_row_shares_is_sent_once():
    now = models.utcnow()
    rows = [dict(_usage('p1', resource, used), created_at=now)
            for resource, used in (('FPGA', 0), ('GPU', 0), ('NIC', 1))]
    with db_api.writer_connection(_context()) as conn:
        batch = write_batch.WriteBatch(conn)
        batch.insert(_USAGES, rows)
        batch.insert(_USAGES, [_usage('p2', 'FPGA', 4)])
        batch.send()
    assert _rows() == [('p1', 'FPGA', 0, 0), ('p1', 'GPU', 0, 0),
                       ('p1', 'NIC', 1, 0), ('p2', 'FPGA', 4, 0)]
    # The template binds each shared value once, each other once a row.
    template = write_batch.insert_rows(
        _USAGES, tuple(rows[0]), 3,
        ('project_id', 'reserved', 'promised', 'leased', 'created_at'))
    assert sorted(template.compile().params) == sorted(
        ['project_id_all', 'reserved_all', 'promised_all', 'leased_all',
         'created_at_all'] + ['%s_%d' % (column, row) for row in range(3)
                              for column in ('resource', 'used')])


def check_a_failed_check_writes_nothing():
    with db_api.get_engine().begin() as conn:
        conn.execute(_USAGES.insert(), [_usage('p1', 'FPGA', 1)])
    row_id = _first_id()
    before = _rows()
    try:
        with db_api.writer_connection(_context()) as conn:
            batch = write_batch.WriteBatch(conn)
            batch.insert(_USAGES, [_usage('p2', 'GPU', 3)])
            _checked_update(batch, row_id, 7)  # It is 1: stale.
            batch.update(_USAGES, row_id,
                         dict(used=5, updated_at=models.utcnow()))
            batch.send()
    except _Stale:
        pass
    else:
        raise AssertionError('a stale check was not raised')
    assert _rows() == before


def check_a_prepared_read_answers_as_a_plain_one():
    with db_api.get_engine().begin() as conn:
        conn.execute(_USAGES.insert(), [
            _usage('p%d' % n, resource, n)
            for n in range(5) for resource in ('FPGA', 'GPU')])
    statement = sa.select(
        _USAGES.c.project_id, _USAGES.c.used.label('count')).where(
            _USAGES.c.project_id.in_(sa.bindparam('ids', expanding=True)),
            _USAGES.c.resource == 'GPU',
            _USAGES.c.used >= sa.bindparam('least')).order_by(
                _USAGES.c.project_id)
    with db_api.get_engine().connect() as conn:
        for ids in (['p1'], ['p1', 'p3', 'p4'], ['p0', 'p2'], ['p1']):
            params = dict(ids=ids, least=1)
            plain = [(row.project_id, row.count)
                     for row in conn.execute(statement, params)]
            run = [(row.project_id, row.count)
                   for row in prepared.execute(conn, statement, params)]
            assert run == plain
            assert plain == [(i, int(i[1:])) for i in sorted(ids)
                             if i != 'p0']


def test_a_batch_writes_one_statement_a_write(sqlite_db):
    check_a_batch_writes_everything(sent_at_most=3)


def test_a_value_every_row_shares_is_sent_once(sqlite_db):
    check_a_value_every_row_shares_is_sent_once()


def test_a_batch_whose_check_fails_writes_nothing(sqlite_db):
    check_a_failed_check_writes_nothing()


def test_a_prepared_read_answers_as_a_plain_one(sqlite_db):
    check_a_prepared_read_answers_as_a_plain_one()


def test_a_batch_checks_one_write():
    batch = write_batch.WriteBatch(None)
    batch.add(_USAGES.select(), {}, expect=1, error=_Stale)
    try:
        batch.add(_USAGES.select(), {}, expect=1, error=_Stale)
    except ValueError as error:
        assert str(error) == 'a batch checks the rows of one write'
    else:
        raise AssertionError('two checks were taken')
