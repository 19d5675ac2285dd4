"""The ledger's Hypothesis state machine, run on every backend and path.

Hypothesis drives ``QUOTAS`` and the in-memory model of the books
(``tests.ledger_model``) with the same random operations: limit changes,
reserves (over quota, idempotent retries, dry runs, negative deltas),
reserves that claim a device through the device hook, commits,
rollbacks, releases, leases starting and ending, budgets set on usage
rows, the passing of time (across the boundaries of short budget
periods), expiry and purge. After every step the database must hold
exactly what the model predicts (the meters of the usage rows to the
second, and which reserves a budget refuses), and the ledger's own
identities must hold.

``run`` runs it on the database cyquota points at, along the path
``tests.ledger_paths`` forced (or the server's fastest).
"""

import collections
import datetime
import itertools

import hypothesis
from hypothesis import stateful
from hypothesis import strategies as st
from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.db import models
from cyquota.db import prepared
from cyquota import exception
from cyquota.lease_tables import calendar
from cyquota.placement import device_errors
from cyquota.quota.ledger import one_statement
from cyquota.quota import QUOTAS
from tests import fixtures
from tests import ledger_model
from tests.unit.placement import test_claim_candidates as claims
from tests.unit.test_engine import Clock

START = datetime.datetime(2030, 1, 1)
UTC = datetime.timezone.utc
PROJECTS = ('p1', 'p2')
RESOURCES = ('FPGA', 'GPU')
CONSUMERS = (None, 'vm-1', 'vm-2')
#: Consumers that claim devices, one set a project (a consumer id is
#: the cloud's, of one project): ``<project>-dev-<n>``.
CLAIMERS = ('dev-1', 'dev-2')
REQUEST_IDS = ('req-1', 'req-2', 'req-3')
UNKNOWN = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'
DEFAULT_EXPIRE = 86400
#: The devices: providers of two FPGAs each, in one aggregate; a claim
#: naming it leaves the one statement to the locked claim.
DEVICE_CLASS = 'FPGA'
DEVICES = 3
DEVICE_ROOM = 2
AGGREGATE = claims.AGGREGATES[0]

# Mostly small positive amounts, so that limits of 0-6 bite; None: the
# default expiry (a day), often, so that many commits come in time.
DELTAS = st.dictionaries(st.sampled_from(RESOURCES),
                         st.sampled_from([1, 1, 1, 2, 2, 3, -1]),
                         min_size=1)
SECONDS = st.sampled_from([None, None, 1, 2, 5, 30])
EXPIRE_FORMS = st.sampled_from(['seconds', 'datetime', 'iso'])
#: The budget period of the run: an hour, so that time crosses periods.
PERIOD = 'PT1H'
#: Moves of the clock: seconds, or ``(PERIOD, offset)``: to ``offset``
#: seconds off the next period's start.
CLOCK_MOVES = (st.sampled_from([0.5, 1, 2, 10, 3600])
               | st.tuples(st.just(PERIOD), st.sampled_from([-1, 0, 1])))
#: The balances a budget is set to (unit-seconds; None: no budget): a
#: few seconds of what a pair holds run them out.
BALANCES = st.none() | st.sampled_from([-3600, 0, 1, 2, 30, 7200])


def consumer_of(project, holder):
    """The consumer id of ``holder`` (of CONSUMERS or CLAIMERS)."""
    if holder in CLAIMERS:
        return '%s-%s' % (project, holder)
    return holder


class LedgerMachine(stateful.RuleBasedStateMachine):

    def __init__(self, clock, unmetered):
        super().__init__()
        fixtures.clear_tables()
        self.clock = clock
        #: The writes of used or leased seen without the meter.
        self.unmetered = unmetered
        clock.now = START
        self.ctx = cyquota_context.get_admin_context()
        self.registered = {}
        self.own = {}
        self.books = ledger_model.Books()
        self.rows = {}
        #: When each refusal of a reserve naming a consumer was recorded.
        self.refusals = []
        self.purged_used = collections.Counter()
        ids = claims.build([{'inventory': {DEVICE_CLASS: {
            'total': DEVICE_ROOM}}, 'aggs': [0]}] * DEVICES)
        self.devices = ledger_model.Devices(dict.fromkeys(ids, DEVICE_ROOM))
        #: The active leases: ``{lease id: (project, {resource: amount})}``.
        self.leases = {}
        self.lease_numbers = itertools.count(1)
        self.meters = ledger_model.Meters()
        #: ``{(project, resource): budget_base}`` of the rows with one.
        self.budgets = {}

    # -- the model's view ----------------------------------------------------

    def limit(self, project, resource):
        return self.own.get((project, resource),
                            self.registered.get(resource, -1))

    def earlier_request(self, project, request_id):
        if request_id is None:
            return []
        return sorted((r for r in self.rows.values()
                       if r.project == project and r.request_id == request_id),
                      key=lambda r: r.resource)

    def now_s(self):
        return meter.seconds(self.clock.now)

    def balance(self, key):
        """The balance of the budget of ``key`` now (None: no budget)."""
        if key not in self.budgets:
            return None
        return self.budgets[key] - self.meters.at(key, self.now_s())

    def expect_reserve(self, project, deltas):
        """The exception a fresh reserve of ``deltas`` must raise and what
        it tells (OverQuota's ``overs``, BudgetExhausted's details), or
        ``(None, None)``."""
        overs = []
        for resource, delta in deltas.items():
            key = (project, resource)
            used, reserved = self.books.used[key], self.books.reserved[key]
            if delta < 0 and used + delta < 0:
                return exception.InvalidDelta, None
            limit = self.limit(project, resource)
            if delta > 0 and 0 <= limit < used + reserved + delta:
                overs.append(dict(
                    project_id=project, resource=resource, scope='project',
                    limit=limit, used=used, reserved=reserved,
                    requested=delta))
        if overs:
            return exception.OverQuota, overs
        for resource, delta in deltas.items():
            balance = self.balance((project, resource))
            if delta > 0 and balance is not None and balance <= 0:
                period = meter.current_periods().of(self.clock.now)
                return exception.BudgetExhausted, dict(
                    project_id=project, resource=resource,
                    period_start=calendar.isotime(period.start),
                    period_end=calendar.isotime(period.end),
                    balance_hours=round(balance / 3600, 6),
                    requested_hours=0)
        return None, None

    def expect_claim(self, consumer, amount):
        """The exception a claim of ``amount`` must raise, or the provider
        it takes."""
        if consumer in self.devices.held:
            return device_errors.ConsumerExists
        return (self.devices.first_with_room(amount)
                or device_errors.NoValidAllocation)

    def free_devices(self, rows):
        """Reserves that claimed and did not commit give the devices
        back."""
        for row in rows:
            if row.devices:
                self.devices.held.pop(row.consumer, None)

    # -- limits --------------------------------------------------------------

    @stateful.initialize(
        registered=st.dictionaries(st.sampled_from(RESOURCES),
                                   st.integers(-1, 6)),
        own=st.dictionaries(st.tuples(st.sampled_from(PROJECTS),
                                      st.sampled_from(RESOURCES)),
                            st.integers(0, 6)),
        ready=st.booleans(),
        budgets=st.dictionaries(st.tuples(st.sampled_from(PROJECTS),
                                          st.sampled_from(RESOURCES)),
                                BALANCES))
    def set_limits(self, registered, own, ready, budgets):
        """Limits and budgets to start with; ``ready``: the projects'
        usage rows made (as a lease event makes them), so that the first
        reserves and ends may take the fast paths, which leave a missing
        row to the locked one."""
        if ready:
            for project in PROJECTS:
                self._lease_event(project, dict.fromkeys(RESOURCES, 0),
                                  None, None)
        for resource, value in registered.items():
            self.change_limit(None, resource, value)
        for (project, resource), value in own.items():
            self.change_limit(project, resource, value)
        for (project, resource), balance in budgets.items():
            self.set_budget(project, resource, balance)

    @stateful.rule(project=st.sampled_from((None,) + PROJECTS),
                   resource=st.sampled_from(RESOURCES),
                   value=st.none() | st.integers(-1, 6))
    def change_limit(self, project, resource, value):
        """Set a registered limit (no project), set a project limit, or
        (no value) delete a project limit."""
        source = QUOTAS.limits
        if project is None:
            value = -1 if value is None else value
            source.set_registered_limit(self.ctx, resource, value)
            self.registered[resource] = value
        elif value is not None:
            source.set_project_limit(self.ctx, project, resource, value)
            self.own[(project, resource)] = value
        elif (project, resource) in self.own:
            source.delete_project_limit(self.ctx, project, resource)
            del self.own[(project, resource)]
        else:
            with pytest.raises(exception.NotFound):
                source.delete_project_limit(self.ctx, project, resource)

    # -- the ledger ----------------------------------------------------------

    @stateful.rule(project=st.sampled_from(PROJECTS), deltas=DELTAS,
                   seconds=SECONDS, form=EXPIRE_FORMS,
                   consumer=st.sampled_from(CONSUMERS), dry_run=st.booleans())
    def reserve(self, project, deltas, seconds, form, consumer, dry_run):
        self._reserve(project, deltas, seconds, form, consumer,
                      dry_run=dry_run)

    @stateful.rule(project=st.sampled_from(PROJECTS), deltas=DELTAS,
                   seconds=SECONDS, form=EXPIRE_FORMS,
                   consumer=st.sampled_from(CONSUMERS),
                   request_id=st.sampled_from(REQUEST_IDS),
                   retry=st.booleans())
    def reserve_with_request_id(self, project, deltas, seconds, form,
                                consumer, request_id, retry):
        earlier = self.earlier_request(project, request_id)
        if retry and earlier:
            deltas = {r.resource: r.delta for r in earlier}
        self._reserve(project, deltas, seconds, form, consumer,
                      request_id=request_id)

    @stateful.rule(project=st.sampled_from(PROJECTS),
                   amount=st.sampled_from([1, 1, 2, 3]),
                   seconds=SECONDS, holder=st.sampled_from(CLAIMERS),
                   request_id=st.none() | st.sampled_from(REQUEST_IDS),
                   member_of=st.booleans())
    def reserve_claiming(self, project, amount, seconds, holder, request_id,
                         member_of):
        """A reserve that claims devices for its consumer: the common
        claim (the one statement's, or its steps), or (naming the
        aggregate) the locked claim."""
        devices = {'resources': '%s:%d' % (DEVICE_CLASS, amount)}
        if member_of:
            devices['member_of'] = AGGREGATE
        self._reserve(project, {DEVICE_CLASS: amount}, seconds, 'seconds',
                      consumer_of(project, holder), request_id=request_id,
                      devices=devices)

    def _reserve(self, project, deltas, seconds, form, consumer,
                 request_id=None, dry_run=False, devices=None):
        deltas = dict(sorted(deltas.items()))
        expire = self.clock.now + datetime.timedelta(
            seconds=seconds or DEFAULT_EXPIRE)
        given = {'seconds': seconds,
                 'datetime': seconds and expire.replace(tzinfo=UTC),
                 'iso': seconds and expire.isoformat() + '+00:00'}[form]
        call = dict(expire=given, request_id=request_id,
                    consumer_id=consumer, dry_run=dry_run, devices=devices)

        earlier = self.earlier_request(project, request_id)
        if earlier:
            same = {r.resource: r.delta for r in earlier} == deltas
            hypothesis.event('reserve: retry, same deltas %s' % same)
            if same:
                assert QUOTAS.reserve(self.ctx, project, deltas, **call) \
                    == [r.uuid for r in earlier]
            else:
                with pytest.raises(exception.RequestIdConflict):
                    QUOTAS.reserve(self.ctx, project, deltas, **call)
            return
        error, told = self.expect_reserve(project, deltas)
        provider = None
        if error is None and devices is not None:
            provider = self.expect_claim(consumer, deltas[DEVICE_CLASS])
            if not isinstance(provider, int):
                error, provider = provider, None
        hypothesis.event('reserve%s: %s' % (devices and ' claiming' or '',
                                            error and error.__name__ or 'ok'))
        if error is not None:
            with pytest.raises(error) as caught:
                QUOTAS.reserve(self.ctx, project, deltas, **call)
            if error is exception.BudgetExhausted:
                assert caught.value.kwargs == told
            elif told:
                assert caught.value.overs == told
            if told and consumer and not dry_run:  # findable by it
                self.refusals.append(self.clock.now)
            return
        uuids = QUOTAS.reserve(self.ctx, project, deltas, **call)
        if dry_run:
            assert uuids == []
            return
        assert len(set(uuids)) == len(deltas)
        assert not set(uuids) & set(self.rows)
        for uuid, (resource, delta) in zip(uuids, deltas.items()):
            self.rows[uuid] = ledger_model.Row(
                uuid, project, resource, delta, expire, request_id, consumer,
                devices=devices is not None)
            if delta > 0:
                self.books.reserved[(project, resource)] += delta
                limit = self.limit(project, resource)
                assert limit < 0 or (
                    self.books.used[(project, resource)]
                    + self.books.reserved[(project, resource)] <= limit)
        if provider is not None:
            self.devices.held[consumer] = (provider, deltas[DEVICE_CLASS])

    @stateful.precondition(lambda self: self.rows)
    @stateful.rule(data=st.data())
    def commit(self, data):
        self._finish(data, QUOTAS.commit, models.COMMITTED,
                     {models.COMMITTED})

    @stateful.precondition(lambda self: self.rows)
    @stateful.rule(data=st.data())
    def rollback(self, data):
        self._finish(data, QUOTAS.rollback, models.ROLLED_BACK,
                     {models.ROLLED_BACK, models.EXPIRED})

    def _finish(self, data, action, target, done):
        """``action`` on a batch of mostly pending reservations of a
        project; ``done`` are the states in which it does nothing."""
        project = data.draw(st.sampled_from(sorted(
            {r.project for r in self.rows.values()})))
        own = [u for u, r in self.rows.items() if r.project == project]
        pending = [u for u in own
                   if self.rows[u].status == models.RESERVED]
        # Mostly pending ones alone, which the one statements end.
        mine = pending if pending and data.draw(st.integers(0, 3)) else own
        batch = data.draw(st.lists(st.sampled_from(mine), min_size=1,
                                   max_size=3, unique=True)) if mine else []
        if not batch or data.draw(st.integers(0, 4)) == 0:
            # One that is not the project's: another's, or none at all.
            batch.append(data.draw(st.sampled_from(
                [u for u in self.rows if u not in own] + [UNKNOWN])))
        if any(u not in own for u in batch):
            hypothesis.event('%s: not found' % target)
            with pytest.raises(exception.ReservationNotFound):
                action(self.ctx, project, batch)
            return
        if any(self.rows[u].status not in done | {models.RESERVED}
               for u in batch):
            hypothesis.event('%s: conflict' % target)
            with pytest.raises(exception.ReservationConflict):
                action(self.ctx, project, batch)
            return
        due = [self.rows[u] for u in batch
               if self.rows[u].status == models.RESERVED
               and self.rows[u].expire < self.clock.now]
        if target == models.COMMITTED and due:
            # Past its expiry: the commit expires it and is refused.
            hypothesis.event('%s: due' % target)
            with pytest.raises(exception.ReservationConflict):
                action(self.ctx, project, batch)
            self._end([row for row in self.rows.values() if row in due],
                      models.EXPIRED)
            return
        hypothesis.event('%s: %d in batch' % (target, len(batch)))
        action(self.ctx, project, batch)
        # A batch is settled row by row in the order the rows were made.
        self._end([row for row in self.rows.values() if row.uuid in batch
                   and row.status == models.RESERVED], target)

    def _end(self, rows, target):
        """Settle reserved ``rows`` as ``target``, in this order."""
        for row in rows:
            self.books.settle(row, target)
            row.status, row.finished = target, self.clock.now
        if target != models.COMMITTED:
            self.free_devices(rows)

    @stateful.rule(project=st.sampled_from(PROJECTS),
                   deltas=st.dictionaries(st.sampled_from(RESOURCES),
                                          st.integers(1, 3), min_size=1),
                   holder=st.sampled_from(CONSUMERS + CLAIMERS[:1]))
    def release(self, project, deltas, holder):
        deltas = dict(sorted(deltas.items()))
        consumer = consumer_of(project, holder)
        uuids = QUOTAS.release(self.ctx, project, deltas, consumer_id=consumer)
        assert len(uuids) == len(deltas)
        for uuid, (resource, amount) in zip(uuids, deltas.items()):
            applied = self.books.release(project, resource, amount, consumer)
            self.rows[uuid] = ledger_model.Row(
                uuid, project, resource, -applied, None, None, consumer,
                models.COMMITTED, self.clock.now)
        # A consumer left holding nothing, nor waiting for anything,
        # gives its devices back.
        if consumer in self.devices.held and not (
                self.books.holds(project, consumer) or any(
                    r.project == project and r.consumer == consumer
                    and r.status == models.RESERVED
                    for r in self.rows.values())):
            hypothesis.event('release: frees devices')
            del self.devices.held[consumer]

    # -- leases --------------------------------------------------------------

    @stateful.rule(project=st.sampled_from(PROJECTS),
                   amounts=st.dictionaries(st.sampled_from(RESOURCES),
                                           st.integers(1, 2), min_size=1))
    def start_lease(self, project, amounts):
        """A lease starts: what it holds moves into the books."""
        lease_id = 'lease-%d' % next(self.lease_numbers)
        self._lease_event(project, amounts, lease_id, 'start')
        self.leases[lease_id] = (project, amounts)

    @stateful.precondition(lambda self: self.leases)
    @stateful.rule(data=st.data())
    def end_lease(self, data):
        """An active lease ends: what it holds leaves the books."""
        lease_id = data.draw(st.sampled_from(sorted(self.leases)))
        project, amounts = self.leases.pop(lease_id)
        self._lease_event(project, amounts, lease_id, 'end')

    def _lease_event(self, project, amounts, lease_id, event):
        """Lock the project's rows of ``amounts`` as a lease event does,
        then (``event``: 'start' or 'end', or None) move them."""
        with db_api.writer_connection(self.ctx) as conn:
            holdings = QUOTAS.lease_holdings(self.ctx, conn, project,
                                             list(amounts))
            for resource, amount in sorted(amounts.items()):
                if event is not None:
                    getattr(holdings, event)(resource, amount, lease_id)
            holdings.write()
        for resource, amount in sorted(amounts.items()):
            if event is not None:
                getattr(self.books, 'lease_' + event)(project, resource,
                                                      amount, lease_id)

    # -- budgets -------------------------------------------------------------

    @stateful.rule(project=st.sampled_from(PROJECTS),
                   resource=st.sampled_from(RESOURCES), balance=BALANCES)
    def set_budget(self, project, resource, balance):
        """Give a pair's usage row a budget of ``balance`` left now, or
        none, as the budgets' layer writes it (``budget_base``: the
        balance plus the meter)."""
        key = (project, resource)
        self._lease_event(project, {resource: 0}, None, None)  # the row
        base = None
        if balance is not None:
            base = balance + self.meters.at(key, self.now_s())
            self.budgets[key] = base
        else:
            self.budgets.pop(key, None)
        ledger_model.set_budget_base(project, resource, base)

    # -- time ----------------------------------------------------------------

    @stateful.rule(move=CLOCK_MOVES)
    def advance_clock(self, move):
        """Let time pass: seconds, or to around the next period's start
        (never back)."""
        if isinstance(move, tuple):
            boundary = meter.current_periods().of(self.clock.now).end
            self.clock.now = max(self.clock.now, boundary
                                 + datetime.timedelta(seconds=move[1]))
        else:
            self.clock.advance(move)

    @stateful.rule(seconds=st.sampled_from([0, 1, 2, 10]))
    def expire(self, seconds):
        """Let ``seconds`` pass, then expire what is due."""
        self.clock.advance(seconds)
        now = self.clock.now
        due = [r for r in self.rows.values()
               if r.status == models.RESERVED and r.expire < now]
        hypothesis.event('expire: %s' % bool(due))
        assert QUOTAS.expire(self.ctx) == len(due)
        self._end(due, models.EXPIRED)

    @stateful.rule()
    def purge(self):
        gone = [r for r in self.rows.values()
                if r.finished is not None and r.finished < self.clock.now]
        refusals = [at for at in self.refusals if at < self.clock.now]
        hypothesis.event('purge: %s' % bool(gone))
        assert QUOTAS.purge(self.ctx) == len(gone) + len(refusals)
        self.refusals = self.refusals[len(refusals):]
        for row in gone:
            if row.status == models.COMMITTED:
                self.purged_used[(row.project, row.resource)] += row.delta
            del self.rows[row.uuid]

    # -- checks after every step ---------------------------------------------

    @stateful.invariant()
    def books_match(self):
        books, reservations, meters = ledger_model.database_books()
        assert books == self.books
        self.meters_match(meters)
        assert reservations == {u: (r.status, r.expire)
                                for u, r in self.rows.items()}
        assert not [d for d in books.drift if d[3] == 'reserved_below_zero']
        assert min(itertools.chain(books.used.values(),
                                   books.reserved.values(),
                                   books.leased.values(),
                                   books.consumers.values()), default=0) >= 0

    @stateful.invariant()
    def every_write_moved_the_meter(self):
        assert self.unmetered == []

    def meters_match(self, found):
        """Each usage row's meter (``found``: ``{key: Metered}``) is what
        the model integrates, exact to the second: ``metered`` at
        ``metered_at`` and the meter now (the holdings change only at a
        step's own instant: a rule moves the clock before it changes
        anything); ``metered_mark`` of the current period is the meter at
        its start; budgets are where they were set."""
        now_s = self.now_s()
        self.meters.follow(self.books, now_s)
        period_s = meter.period_seconds(self.clock.now)
        for key in self.meters.keys() | set(found):
            row = found.get(key, ledger_model.NO_ROW)
            assert row.at(now_s) == self.meters.at(key, now_s), key
            if row.metered_at is not None:
                assert row.metered_at <= now_s
                assert row.metered == self.meters.at(key, row.metered_at)
            if row.marked_period == period_s:
                assert row.metered_mark == self.meters.at(key, period_s)
            assert row.budget_base == self.budgets.get(key)

    @stateful.invariant()
    def devices_match(self):
        assert ledger_model.database_devices() == (
            self.devices.allocations(DEVICE_CLASS),
            sorted(self.devices.held))

    @stateful.invariant()
    def counts_are_the_sum_of_the_rows(self):
        # reserved: the positive deltas of reserved rows; used: the deltas
        # of committed rows (releases included) and what active leases
        # hold, plus what purge removed, less what could not be taken
        # (used_below_zero drift of a commit or a lease's end).
        reserved, used = collections.Counter(), collections.Counter(
            self.purged_used)
        for row in self.rows.values():
            key = (row.project, row.resource)
            if row.status == models.RESERVED and row.delta > 0:
                reserved[key] += row.delta
            elif row.status == models.COMMITTED:
                used[key] += row.delta
        leased = collections.Counter()
        for project, amounts in self.leases.values():
            for resource, amount in amounts.items():
                leased[(project, resource)] += amount
        used.update(leased)
        for (project, resource, _, kind, requested, applied), n in \
                self.books.drift.items():
            if kind == 'used_below_zero':
                used[(project, resource)] += (abs(requested)
                                              - abs(applied)) * n
        assert +reserved == +self.books.reserved
        assert +used == +self.books.used

    @stateful.invariant()
    def usage_reports_the_books(self):
        for project in PROJECTS:
            usage = QUOTAS.get_project_usage(self.ctx, project)
            for resource in RESOURCES:
                key = (project, resource)
                limit = self.limit(project, resource)
                used, reserved = self.books.used[key], self.books.reserved[key]
                expected = dict(
                    limit=limit, used=used, reserved=reserved,
                    leased=self.books.leased[key], promised=0,
                    available=-1 if limit < 0 else max(
                        0, limit - used - reserved))
                balance = self.balance(key)
                if balance is not None:
                    expected['remaining_hours'] = meter.hours(balance)
                assert usage[resource] == expected


def run(monkeypatch, examples, steps):
    """Run the machine ``examples`` times, ``steps`` steps at the most, on
    the database cyquota points at, with time standing still but when a
    rule moves it, and budget periods of ``PERIOD``."""
    CONF.set_override('reservation_retention', 0, 'quota')
    CONF.set_override('period', PERIOD, 'budgets')
    clock = Clock(START)
    monkeypatch.setattr(timeutils, 'utcnow', clock)
    unmetered = []

    def watch(conn, cursor, statement, *args):
        words = statement.split(None, 2)
        if words[0] == 'EXECUTE':  # MariaDB's of a prepared statement
            statement = prepared.text(words[1].split('(')[0])
        unmetered.extend(ledger_model.unmetered_writes(statement))
    engines = [db_api.get_engine()]
    if one_statement.available_on(engines[0].dialect):
        engines.append(db_api.get_autocommit_engine())
    for engine in engines:
        sa.event.listen(engine, 'before_cursor_execute', watch)
    try:
        fixtures.run_machine(lambda: LedgerMachine(clock, unmetered),
                             examples, steps)
    finally:
        CONF.clear_override('period', 'budgets')
        for engine in engines:
            sa.event.remove(engine, 'before_cursor_execute', watch)
