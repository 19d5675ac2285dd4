"""Test helpers shared by unit and functional tests: point cyquota at a
database, create or drop a throw-away database on a real server (both from
``servers.databases``, which the benchmarks use too), and empty the
tables between tests, watch the SQL statements sent, and run workers in
processes of their own (or in pools of them, one per database)."""

import contextlib
import multiprocessing

import hypothesis
from hypothesis import stateful
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import attachment_models  # noqa: F401 (registers tables)
from cyquota.db import lease_models  # noqa: F401 (registers tables)
from cyquota.db import models
from cyquota.db import placement_models  # noqa: F401 (registers tables)
from servers import databases

SERVERS = databases.SERVERS
use_database = databases.use_database
create_database = databases.create_database
drop_database = databases.drop_database


def clear_tables():
    """Empty every cyquota table (children before parents)."""
    with db_api.get_engine().begin() as conn:
        for table in reversed(models.Base.metadata.sorted_tables):
            conn.execute(table.delete())


@contextlib.contextmanager
def statements_sent(engine=None):
    """Yield a list that fills with the SQL text of every statement sent
    on ``engine`` (cyquota's engine when None) inside the block."""
    engine = engine or db_api.get_engine()
    sent = []

    def seen(conn, cursor, statement, *args):
        sent.append(statement)
    sa.event.listen(engine, 'before_cursor_execute', seen)
    try:
        yield sent
    finally:
        sa.event.remove(engine, 'before_cursor_execute', seen)


def start_worker(url):
    """The first step of a spawned worker process: the options' defaults,
    and cyquota pointed at ``url`` (migrated already)."""
    CONF([], project='cyquota', default_config_files=[])
    use_database(url, migrate=False)


class WorkerPools:
    """Pools of spawned worker processes, one per database URL, each
    started once (spawning is slow) and all joined by ``close()``."""

    def __init__(self, workers, initializer):
        self._workers = workers
        self._initializer = initializer
        self._pools = {}

    def of(self, url):
        """The pool of ``url``: its processes each first run
        ``initializer(url, barrier)``, one barrier of them all."""
        if url not in self._pools:
            spawn = multiprocessing.get_context('spawn')
            self._pools[url] = spawn.Pool(
                self._workers, self._initializer,
                (url, spawn.Barrier(self._workers)))
        return self._pools[url]

    def close(self):
        """Close every pool and wait for its processes to exit."""
        for pool in self._pools.values():
            pool.close()
            pool.join()


def worker_pools(workers, initializer):
    """The fixture ``worker_pools`` of a test module, to assign to that
    name there: its ``WorkerPools(workers, initializer)``, closed once the
    module's tests are done."""
    @pytest.fixture(scope='module', name='worker_pools')
    def fixture():
        pools = WorkerPools(workers, initializer)
        yield pools
        pools.close()
    return fixture


def results_of_workers(target, arguments, timeout=300):
    """Run ``target(*args, results)`` in a spawned process for each
    ``args`` of ``arguments`` at once, each putting one dict on the queue
    ``results``; return the dicts merged, once every process exited 0."""
    spawn = multiprocessing.get_context('spawn')
    results = spawn.Queue()
    workers = [spawn.Process(target=target, args=(*args, results))
               for args in arguments]
    for process in workers:
        process.start()
    merged = {}
    for _process in workers:
        merged.update(results.get(timeout=timeout))
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    return merged


@contextlib.contextmanager
def mariadb_prepares_no_more():
    """MariaDB's ``max_prepared_stmt_count`` lowered to what its sessions
    hold now, so that it refuses every new ``PREPARE``; set back after."""
    with db_api.get_engine().connect() as conn:
        limit = conn.exec_driver_sql(
            'SELECT @@GLOBAL.max_prepared_stmt_count').scalar()
        held = conn.exec_driver_sql(
            "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").one()[1]
        conn.exec_driver_sql('SET GLOBAL max_prepared_stmt_count = %d'
                             % int(held))
        try:
            yield
        finally:
            conn.exec_driver_sql('SET GLOBAL max_prepared_stmt_count = %d'
                                 % limit)


def run_machine(factory, examples, steps):
    """Run the state machine that ``factory`` makes ``examples`` times,
    ``steps`` steps at the most, as the model tests run theirs: no
    deadline (a database's step takes what it takes) and no example
    database (every run draws afresh)."""
    stateful.run_state_machine_as_test(
        factory, settings=hypothesis.settings(
            max_examples=examples, stateful_step_count=steps,
            deadline=None, database=None,
            suppress_health_check=[hypothesis.HealthCheck.too_slow]))
