"""cyquota.db.engine_tuning's engine set-up that reaches below public
interfaces."""

import sqlalchemy as sa
from sqlalchemy import pool as sa_pool
from sqlalchemy.pool import base as pool_base

from cyquota.db import api as db_api


def test_pre_ping_flag_is_the_pool_attribute_cyquota_clears():
    # cyquota.db.engine_tuning._no_pre_ping turns oslo.db's pre-ping off by
    # this attribute, for want of a public switch: a SQLAlchemy that renames it
    # must fail here rather than ping silently again.
    assert sa_pool.QueuePool(lambda: None, pre_ping=True)._pre_ping is True
    assert sa_pool.QueuePool(lambda: None)._pre_ping is False


def test_the_engine_neither_pings_nor_yields(sqlite_db):
    engine = db_api.get_engine()
    assert engine.pool._pre_ping is False
    # oslo.db's check-in sleep(0) is off through its public option.
    assert '_thread_yield' not in [listener.__name__ for listener
                                   in engine.pool.dispatch.checkin]


def test_reset_on_return_is_the_pool_attribute_cyquota_sets():
    # cyquota.db.pool_returns.no_rollback_after_an_end replaces the pool's
    # rollback on return by its own reset listener through this attribute,
    # what reset_on_return=None sets: if SQLAlchemy renamed it, the pool
    # would roll back twice, or (a value it no longer reads) not at all.
    assert sa_pool.QueuePool(lambda: None, reset_on_return=None
                             )._reset_on_return is pool_base.reset_none
    assert sa_pool.QueuePool(lambda: None
                             )._reset_on_return is pool_base.reset_rollback


def test_skip_autocommit_rollback_is_the_dialect_attribute_cyquota_sets():
    # cyquota.db.engine_tuning.autocommit spares the ROLLBACK a closing
    # Connection sends by this attribute, what the create_engine() argument
    # sets: if SQLAlchemy renamed it, every one-statement operation on
    # MariaDB would cost a ROLLBACK round trip again.
    engine = sa.create_engine('sqlite://', skip_autocommit_rollback=True)
    assert engine.dialect.skip_autocommit_rollback is True
    assert sa.create_engine('sqlite://'
                            ).dialect.skip_autocommit_rollback is False


def test_the_autocommit_engine_commits_each_statement(sqlite_db):
    engine = db_api.get_autocommit_engine()
    assert engine is not db_api.get_engine()
    assert engine.dialect.skip_autocommit_rollback is True
    with db_api.autocommit_connection() as conn:
        assert engine.dialect.detect_autocommit_setting(
            conn.connection.dbapi_connection)


def test_mysql_urls_without_a_charset_talk_utf8mb4():
    from cyquota.conf import CONF
    from cyquota.db import engine_tuning

    def parameters(url):
        return engine_tuning.options(url).get('connection_parameters')

    # oslo.db would ask for the 3-byte utf8 on these.
    assert parameters('mysql+pymysql://u:p@db/cyquota') == 'charset=utf8mb4'
    assert parameters('mariadb+pymysql://db/cyquota') == 'charset=utf8mb4'
    assert parameters('mysql+pymysql://db/cyquota?charset=utf8') is None
    assert parameters('postgresql://db/cyquota') is None
    CONF.set_override('connection_parameters', 'read_timeout=5', 'database')
    try:
        assert parameters('mysql+pymysql://db/cyquota') == (
            'read_timeout=5&charset=utf8mb4')
        CONF.set_override('connection_parameters', 'charset=latin1',
                          'database')
        assert parameters('mysql+pymysql://db/cyquota') is None
    finally:
        CONF.clear_override('connection_parameters', 'database')


def test_a_connection_rolls_back_through_its_dialect(monkeypatch):
    # cyquota.db.pool_returns.keep_prepared_through_rollbacks replaces
    # the dialect's do_rollback on PostgreSQL: a SQLAlchemy that rolled a
    # Connection back otherwise would leave psycopg forgetting its
    # prepared statements at every read again.
    engine = sa.create_engine('sqlite://')
    rolled = []
    monkeypatch.setattr(engine.dialect, 'do_rollback', rolled.append,
                        raising=False)
    with engine.connect() as conn:
        conn.exec_driver_sql('SELECT 1')
        del rolled[:]
        conn.rollback()
        assert len(rolled) == 1
