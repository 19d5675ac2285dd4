"""The quota ledger on the real PostgreSQL and MariaDB servers.

The main semantics run once more on each server (the unit tests' own
functions, with the ``db`` fixture pointed at the server), then the races
that only real processes on a real server can show: each round starts the
same call in several processes at once (a barrier), so they collide on the
same rows.
"""

import re
import time

from oslo_db import exception as db_exc
from psycopg import sql as psycopg_sql
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import prepared
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit import test_engine
from tests.unit.test_db_backends import (  # noqa: F401 (and here)
    test_the_plain_steps_keep_the_books,
)
from tests.unit.test_ledger_statements import (  # noqa: F401 (and here)
    test_a_detach_takes_the_same_path,  # noqa: H301
    test_a_refused_update_falls_back_to_the_locked_path,
    test_a_usage_document_is_a_transaction_of_its_own,
    test_a_usage_document_is_one_query,
    test_every_resource_of_a_reserve_in_the_same_statement,
    test_reserve_and_commit_change_counts_without_reading_them,
    test_rollback_and_expiry_touch_no_consumer,
    test_the_one_query_document_says_what_the_reads_say,
    test_unlimited_and_zero_limits_in_the_statement,
)
from tests.unit.test_engine import (  # noqa: F401 (run here on each server)
    counts,  # noqa: H301 (fixtures and tests, by name)
    rows,
    test_a_batch_is_applied_in_creation_order,
    test_a_batch_may_mix_pending_and_done_reservations,
    test_commit_after_expiry_time_but_before_expire_runs,
    test_commit_moves_reserved_to_used_once,
    test_consumer_usages_follow_commits_and_releases,
    test_dry_run_checks_and_writes_nothing,
    test_expire_rolls_back_what_has_expired,
    test_expire_works_through_batches,
    test_finishing_the_other_way_is_a_conflict,
    test_negative_commit_never_takes_used_below_zero,
    test_negative_delta_touches_used_only_on_commit,
    test_over_quota_is_all_or_nothing_and_names_every_blocked_resource,
    test_project_limit_beats_registered_beats_default,
    test_purge_deletes_finished_rows_after_retention,
    test_release_below_zero_is_recorded_as_drift,
    test_release_takes_used_at_once,
    test_reserve_holds_each_resource_in_resource_order,
    test_reserve_up_to_the_limit_and_not_beyond,
    test_rollback_gives_reserved_back_once,
    test_same_request_id_other_deltas_is_a_conflict,
    test_same_request_id_returns_the_same_reservations,
    test_unknown_reservations_are_not_found,
    test_usage_lists_every_known_resource,
)

WORKERS = 4
ROUNDS = 12

clock = test_engine.clock


@pytest.fixture
def db(backend, clock):
    """The server's ledger, with time standing still (for the unit tests
    run here)."""
    return clock


def test_fractions_of_a_second_are_kept(db, ctx):
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=0.4)
    db.advance(0.3)
    assert QUOTAS.expire(ctx) == 0
    assert rows('reservations', uuid=uuids[0])[0]['status'] == 'reserved'
    db.advance(0.2)
    assert QUOTAS.expire(ctx) == 1


# A trigger on the one statement's last write that fails as a deadlock.
_ABORTED = {
    'mysql': [
        "CREATE TRIGGER aborted BEFORE INSERT ON {table} FOR EACH ROW"
        " SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,"
        " MESSAGE_TEXT = 'Deadlock found when trying to get lock'"],
    'postgresql': [
        "CREATE FUNCTION aborted() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40P01',"
        " MESSAGE = 'deadlock detected'; END $$",
        "CREATE TRIGGER aborted BEFORE INSERT ON {table} FOR EACH ROW"
        " EXECUTE FUNCTION aborted()"],
}
_NOT_ABORTED = {
    'mysql': ['DROP TRIGGER aborted'],
    'postgresql': ['DROP TRIGGER aborted ON {table}', 'DROP FUNCTION aborted'],
}


def _in_transaction(conn):
    """Whether the server holds a transaction open on ``conn``."""
    if conn.dialect.name == 'postgresql':
        return conn.exec_driver_sql('SELECT now() <> statement_timestamp()'
                                    ).scalar()
    return conn.exec_driver_sql('SELECT @@in_transaction').scalar() == 1


@pytest.mark.parametrize('operation', ['reserve', 'commit'])
@pytest.mark.parametrize('resources', [['FPGA'], ['FPGA', 'GPU']])
def test_a_one_statement_failing_late_leaves_nothing(backend, ctx,
                                                     operation, resources):
    # On Galera another node's write may abort MariaDB's compound
    # statement after its first writes; a trigger's error on the last
    # write stands in for that (and on PostgreSQL for any error after the
    # first CTEs wrote). The statement's own transaction rolls back, the
    # error is the deadlock that oslo.db translates (and cyquota retries),
    # and its autocommit connection comes back to the pool with no
    # transaction open. So for the statements of one resource and of
    # several.
    deltas = {resource: 1 for resource in resources}
    for resource in resources:
        QUOTAS.limits.set_project_limit(ctx, 'p1', resource, 5)
    QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(ctx, 'p1', deltas))
    held = QUOTAS.reserve(ctx, 'p1', deltas)
    table = {'reserve': 'reservations', 'commit': 'consumer_usages'}[
        operation]
    CONF.set_override('db_max_retries', 1, 'quota')
    engine = db_api.get_engine()
    with engine.begin() as conn:
        for statement in _ABORTED[backend]:
            conn.exec_driver_sql(statement.format(table=table))
    try:
        with pytest.raises(db_exc.DBDeadlock):
            if operation == 'reserve':
                QUOTAS.reserve(ctx, 'p1', deltas)
            else:
                QUOTAS.commit(ctx, 'p1', held)
    finally:
        with engine.begin() as conn:
            for statement in _NOT_ABORTED[backend]:
                conn.exec_driver_sql(statement.format(table=table))
    assert [counts(ctx, resource=r) for r in resources] == [(1, 1)] * len(
        resources)
    assert sorted(r['status'] for r in rows('reservations')) == sorted(
        ['committed', 'reserved'] * len(resources))
    with db_api.autocommit_connection() as conn:
        assert not _in_transaction(conn)


def test_a_one_statement_refuses_quietly(backend, ctx, caplog):
    # Over quota, the one statement refuses (having written nothing, or
    # rolled back what it wrote) and the locked path says why: no error
    # reaches the log on the way.
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 2)
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'GPU', 0)
    held = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    caplog.set_level('WARNING')
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    with pytest.raises(exception.OverQuota):  # FPGA fits, then GPU not
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1, 'GPU': 1})
    QUOTAS.commit(ctx, 'p1', held)
    QUOTAS.commit(ctx, 'p1', held)  # committed already: the statement
    assert caplog.records == []     # refuses
    assert counts(ctx) == (1, 0)
    assert counts(ctx, resource='GPU') == (0, 0)


def test_a_one_statement_undoes_what_it_wrote_when_a_later_step_fails(
        backend, ctx):
    # Drift: the usage row holds less reserved than the reservation. The
    # one statement ends the reservation, then cannot move the counts: it
    # must undo the end (else the steps would find it committed and move
    # nothing), and the steps commit it, recording the drift.
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, consumer_id='vm')
    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql("UPDATE quota_usages SET reserved = 1"
                             " WHERE project_id = 'p1'")
    assert QUOTAS.commit(ctx, 'p1', uuids) is None
    assert counts(ctx) == (2, 0)
    assert rows('reservations', uuid=uuids[0])[0]['status'] == 'committed'
    assert [(d['kind'], d['requested'], d['applied'])
            for d in rows('drift_events')] == [('reserved_below_zero', 2, 1)]
    assert [(c['consumer_id'], c['used'])
            for c in rows('consumer_usages')] == [('vm', 2)]


def _kept_plan(call, table):
    """The plan PostgreSQL keeps for any parameters of the one statement
    that ``call()`` runs (as psycopg prepares it), made afresh on a
    connection where ``table`` has no statistics (a new table, or one
    grown since its last analysis)."""
    sent = []

    def record(conn, cursor, statement, sent_parameters, *args):
        sent.append((statement, sent_parameters))
    # The one statement runs alone, on the autocommit engine.
    alone = db_api.get_autocommit_engine()
    sa.event.listen(alone, 'before_cursor_execute', record)
    try:
        call()
    finally:
        sa.event.remove(alone, 'before_cursor_execute', record)
    [(statement, sent_parameters)] = [s for s in sent
                                      if s[0].startswith('WITH')]
    binds = list(dict.fromkeys(prepared.BIND.findall(statement)))
    numbered = prepared.BIND.sub(
        lambda match: '$%d' % (binds.index(match.group(1)) + 1), statement)
    with db_api.get_engine().connect() as conn:
        conn.exec_driver_sql("DELETE FROM pg_statistic WHERE starelid = "
                             "'%s'::regclass" % table)
        conn.exec_driver_sql('SET plan_cache_mode = force_generic_plan')
        # Planned afresh on this connection, which is not pooled again.
        driver = conn.connection.dbapi_connection
        driver.execute('PREPARE kept AS ' + numbered)
        values = ', '.join(psycopg_sql.Literal(sent_parameters[bind])
                           .as_string(driver) for bind in binds)
        plan = '\n'.join(row[0] for row in driver.execute(
            'EXPLAIN (COSTS OFF) EXECUTE kept(%s)' % values))
        conn.rollback()
        conn.invalidate()
    return plan


def _cte(plan, name):
    """The lines of ``plan`` that plan its CTE ``name``."""
    lines = plan.splitlines()
    [first] = [i for i, line in enumerate(lines)
               if line.strip() == 'CTE %s' % name]
    depth = len(lines[first]) - len(lines[first].lstrip())
    end = next((i for i in range(first + 1, len(lines))
                if len(lines[i]) - len(lines[i].lstrip()) <= depth),
               len(lines))
    return '\n'.join(lines[first:end])


# The plan PostgreSQL keeps for a prepared statement is made for any
# parameters. On a table without statistics yet (new, or grown since its
# last analysis) it must still look rows up by their keys, not walk every
# row the project has: a commit or reserve would cost more as the project
# grows, until the table is analyzed.

# One reservation and a batch: their statements differ (end_one_ctes).
_BATCHES = pytest.mark.parametrize('batch', [1, 2])


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
@_BATCHES
def test_a_prepared_commit_finds_its_reservations_by_uuid(backend, ctx,
                                                          batch):
    # A batch's uuids are an array to PostgreSQL: on a table of a few
    # hundred rows it reads them all, which costs less there.
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', -1)
    held = [QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})[0] for _ in range(2000)]
    plan = _kept_plan(lambda: QUOTAS.commit(ctx, 'p1', held[:batch]),
                      'reservations')
    # A batch ends each reservation in a CTE of its own.
    for name in ['ended'] if batch == 1 else [
            'ended_%d' % index for index in range(batch)]:
        assert re.search(r'Index Scan using reservations_uuid_key\b',
                         _cte(plan, name)), plan


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
@pytest.mark.parametrize('size', [10, 200])
def test_a_prepared_batch_commit_made_on_a_small_table_scans_none(
        backend, ctx, size):
    # A plan kept for a list of uuids made while the table had a few
    # hundred rows would scan it whole, and keep scanning as it grows.
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', -1)
    held = [QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})[0] for _ in range(size)]
    plan = _kept_plan(lambda: QUOTAS.commit(ctx, 'p1', held[:2]),
                      'reservations')
    assert 'Seq Scan on reservations' not in plan, plan


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
@_BATCHES
def test_a_prepared_commit_finds_consumer_rows_by_their_key(backend, ctx,
                                                            batch):
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', -1)
    for number in range(300):
        QUOTAS.commit(ctx, 'p1', QUOTAS.reserve(
            ctx, 'p1', {'FPGA': 1}, consumer_id='vm-%d' % number))
    taken = [QUOTAS.reserve(ctx, 'p1', {'FPGA': -1}, consumer_id='vm-%d'
                            % number)[0] for number in range(batch)]
    plan = _kept_plan(lambda: QUOTAS.commit(ctx, 'p1', taken),
                      'consumer_usages')
    [condition] = [line for line in _cte(plan, 'taken_off').splitlines()
                   if 'Index Cond' in line]
    assert 'consumer_id' in condition, plan


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_a_prepared_reserve_finds_its_request_id_in_the_unique_index(
        backend, ctx):
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', -1)
    for number in range(300):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='r-%d' % number)
    plan = _kept_plan(
        lambda: QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, request_id='last'),
        'reservations')
    counted = _cte(plan, 'counted_0')
    assert 'uniq_reservations0project0request0res' in counted, plan
    assert 'reservations_project_status_idx' not in counted, plan


# -- races between processes -------------------------------------------------

_barrier = None
_collisions = []


def _start_worker(url, barrier):
    """Runs first in each worker process: configure, point at ``url``."""
    global _barrier
    _barrier = barrier
    CONF([], project='cyquota', default_config_files=[])
    # Small batches: concurrent expiry interleaves more transactions.
    CONF.set_override('batch_size', 5, 'quota')
    fixtures.use_database(url, migrate=False)
    # Every database error the ledger saw (and retried): proof of a race.
    sa.event.listen(db_api.get_engine(), 'handle_error',
                    lambda error: _collisions.append(1))


def _in_step(calls):
    """Run each ``(method, args, kwargs)`` of ``calls`` on QUOTAS when all
    the workers are ready for it. Returns each one's result (or the name of
    the quota error it raised), and how many database errors were retried.
    """
    ctx = cyquota_context.get_admin_context()
    results = []
    del _collisions[:]
    for method, args, kwargs in calls:
        _barrier.wait(timeout=60)
        try:
            results.append(getattr(QUOTAS, method)(ctx, *args, **kwargs))
        except (exception.OverQuota, exception.ReservationConflict) as error:
            results.append(type(error).__name__)
    return results, len(_collisions)


worker_pools = fixtures.worker_pools(WORKERS, _start_worker)


@pytest.fixture
def in_step(db_url, worker_pools):
    """``in_step(calls_of_worker_0, ...)``: one list of calls per worker,
    run round by round, each round's calls at the same moment in
    ``WORKERS`` processes. Returns each worker's results, and how many
    database errors (lost races) the ledger retried in all."""
    pool = worker_pools.of(db_url)

    def run(*per_worker):
        assert len(per_worker) == WORKERS
        pending = [pool.apply_async(_in_step, (calls,))
                   for calls in per_worker]
        results, collisions = zip(*(p.get(timeout=300) for p in pending))
        return results, sum(collisions)
    return run


def _usage_rows():
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.text(
            'SELECT project_id, resource, used, reserved FROM quota_usages '
            'ORDER BY project_id, resource')).all()


def test_first_reservations_of_a_pair_at_once(backend, ctx, in_step):
    # Odd projects have an FPGA limit of 3: three of the four get in.
    projects = ['first-%02d' % i for i in range(ROUNDS)]
    for project in projects[1::2]:
        QUOTAS.limits.set_project_limit(ctx, project, 'FPGA', 3)
    calls = [('reserve', (p, {'FPGA': 1, 'GPU': 2}), {}) for p in projects]
    results, collisions = in_step(*[calls] * WORKERS)
    assert collisions  # first inserts did collide (and were retried)

    for i, project in enumerate(projects):
        got = [r[i] for r in results]
        admitted = [u for u in got if u != 'OverQuota']
        assert len(admitted) == (3 if i % 2 else 4), got
        assert counts(ctx, project, 'FPGA') == (0, len(admitted))
        assert counts(ctx, project, 'GPU') == (0, 2 * len(admitted))
        held = {r['uuid'] for r in rows('reservations', project_id=project)}
        assert held == {u for uuids in admitted for u in uuids}
        assert len(held) == 2 * len(admitted)
    assert [(p, r) for p, r, _, _ in _usage_rows()] == [
        (p, r) for p in projects for r in ('FPGA', 'GPU')]


def test_same_request_id_at_once(backend, ctx, in_step):
    # Even rounds on a fresh project, odd ones on a project in use.
    QUOTAS.reserve(ctx, 'busy', {'FPGA': 1, 'GPU': 1})
    requests = [('fresh-%02d' % i if i % 2 == 0 else 'busy', 'req-%02d' % i)
                for i in range(ROUNDS)]
    calls = [('reserve', (p, {'FPGA': 2, 'GPU': 1}), {'request_id': r})
             for p, r in requests]
    results, _ = in_step(*[calls] * WORKERS)

    for i, (project, request_id) in enumerate(requests):
        got = {tuple(r[i]) for r in results}
        assert len(got) == 1, got
        held = rows('reservations', project_id=project,
                    request_id=request_id)
        assert [r['uuid'] for r in held] == list(got.pop())
    assert counts(ctx, 'busy', 'FPGA') == (0, 1 + ROUNDS)
    assert counts(ctx, 'busy', 'GPU') == (0, 1 + ROUNDS // 2)
    assert counts(ctx, 'fresh-00', 'FPGA') == (0, 2)


def test_expire_in_several_processes_at_once(backend, ctx, in_step):
    due = []
    for i in range(40):
        due += QUOTAS.reserve(ctx, 'exp-%d' % (i % 8), {'FPGA': 1, 'GPU': 1},
                              expire=1)
    kept = QUOTAS.reserve(ctx, 'exp-0', {'FPGA': 1})
    time.sleep(2.1)  # past every expiry, also rounded to whole seconds
    results, _ = in_step(*[[('expire', (), {})]] * WORKERS)

    assert sum(r[0] for r in results) == len(due)
    statuses = {r['uuid']: r['status'] for r in rows('reservations')}
    assert {statuses[u] for u in due} == {'expired'}
    assert statuses[kept[0]] == 'reserved'
    assert [(p, r, u, n) for p, r, u, n in _usage_rows() if n] == [
        ('exp-0', 'FPGA', 0, 1)]


def test_commit_and_rollback_of_one_reservation_at_once(
        backend, ctx, in_step):
    held = [QUOTAS.reserve(ctx, 'race', {'FPGA': 1}) for _ in range(ROUNDS)]
    commit = [('commit', ('race', uuids), {}) for uuids in held]
    rollback = [('rollback', ('race', uuids), {}) for uuids in held]
    results, _ = in_step(commit, commit, rollback, rollback)

    committed = 0
    for i, [uuid] in enumerate(held):
        status = rows('reservations', uuid=uuid)[0]['status']
        won = [None, None] + ['ReservationConflict'] * 2
        if status == 'rolled_back':
            won.reverse()
        else:
            assert status == 'committed'
            committed += 1
        assert [r[i] for r in results] == won
    assert counts(ctx, 'race', 'FPGA') == (committed, 0)
    assert sum(r['used'] for r in rows('consumer_usages')) == committed


def test_commit_and_expiry_of_one_reservation_at_once(
        backend, ctx, in_step):
    # A commit locks its reservation before the counts, as expiry does, so
    # the two queue and never deadlock: no database error at all.
    committed = expired = 0
    for round_ in range(ROUNDS // 2):
        project = 'due-%02d' % round_
        first, second = (QUOTAS.reserve(ctx, project, {'FPGA': 1},
                                        expire=0.2) for _ in range(2))
        time.sleep(0.3)
        results, collisions = in_step(
            [('commit', (project, first), {})],
            [('commit', (project, second), {})],
            [('expire', (), {})], [('expire', (), {})])
        assert collisions == 0
        statuses = [rows('reservations', uuid=uuids[0])[0]['status']
                    for uuids in (first, second)]
        for status, [result] in zip(statuses, results):
            assert (status, result) in (('committed', None), (
                'expired', 'ReservationConflict')), (statuses, results)
        # A commit past the expiry expires the row itself (and is
        # refused); each row ends once, so nothing is given back twice.
        assert sum(r[0] for r in results[2:]) <= statuses.count('expired')
        assert rows('drift_events') == []
        assert counts(ctx, project, 'FPGA') == (
            statuses.count('committed'), 0)
        committed += statuses.count('committed')
        expired += statuses.count('expired')
    assert sum(r['used'] for r in rows('consumer_usages')) == committed
