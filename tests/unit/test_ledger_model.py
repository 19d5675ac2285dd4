"""Model-based test of the quota ledger.

Hypothesis drives ``QUOTAS`` (on SQLite) and a plain in-memory model of the
books with the same random operations: limit changes, reserves (over quota,
idempotent retries, dry runs, negative deltas), commits, rollbacks,
releases, the passing of time, expiry and purge. After every step the
database must hold exactly what the model predicts, and the ledger's own
identities must hold.
"""

import collections
import dataclasses
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
from cyquota.db import models
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit.test_engine import Clock

START = datetime.datetime(2030, 1, 1)
UTC = datetime.timezone.utc
PROJECTS = ('p1', 'p2')
RESOURCES = ('FPGA', 'GPU')
CONSUMERS = (None, 'vm-1', 'vm-2')
REQUEST_IDS = ('req-1', 'req-2', 'req-3')
UNKNOWN = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'
DEFAULT_EXPIRE = 86400

# Mostly small positive amounts, so that limits of 0-6 bite; None: the
# default expiry (a day).
DELTAS = st.dictionaries(st.sampled_from(RESOURCES),
                         st.sampled_from([1, 1, 1, 2, 2, 3, -1]),
                         min_size=1)
SECONDS = st.sampled_from([None, 1, 2, 5, 30])
EXPIRE_FORMS = st.sampled_from(['seconds', 'datetime', 'iso'])


@dataclasses.dataclass
class Row:
    """A reservation row as the model sees it."""

    uuid: str
    project: str
    resource: str
    delta: int
    expire: datetime.datetime
    request_id: str
    consumer: str
    status: str = models.RESERVED
    finished: datetime.datetime = None


@dataclasses.dataclass
class Books:
    """Every count the ledger keeps: usages, consumers and drift events."""

    used: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    reserved: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    consumers: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    drift: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)

    def __eq__(self, other):
        # Counter's unary + drops zero entries: a zero row equals no row.
        return all(+a == +b for a, b in zip(
            (self.used, self.reserved, self.consumers, self.drift),
            (other.used, other.reserved, other.consumers, other.drift)))

    def take(self, field, key, amount):
        """Take ``amount`` off a count, stopping at zero; returns what was
        taken."""
        counter = getattr(self, field)
        applied = min(amount, counter[key])
        counter[key] -= applied
        return applied

    def record(self, key, consumer, kind, requested, applied):
        self.drift[key + (consumer, kind, requested, applied)] += 1

    def consumer_add(self, project, resource, consumer, delta):
        key = (project, resource, consumer or '')
        if self.consumers[key] + delta >= 0:
            self.consumers[key] += delta
        else:
            held, self.consumers[key] = self.consumers[key], 0
            self.record((project, resource), consumer,
                        'consumer_release_below_zero', -delta, held)

    def settle(self, row, target):
        """Commit, roll back or expire one reserved row."""
        key = (row.project, row.resource)
        if row.delta > 0:
            given = self.take('reserved', key, row.delta)
            if given < row.delta:
                self.record(key, row.consumer, 'reserved_below_zero',
                            row.delta, given)
        if target != models.COMMITTED:
            return
        if row.delta > 0:
            self.used[key] += row.delta
        else:
            applied = self.take('used', key, -row.delta)
            if applied < -row.delta:
                self.record(key, row.consumer, 'used_below_zero', row.delta,
                            -applied)
        self.consumer_add(row.project, row.resource, row.consumer, row.delta)

    def release(self, project, resource, amount, consumer):
        """Take ``amount`` off ``used`` at once; returns what was taken."""
        key = (project, resource)
        applied = self.take('used', key, amount)
        if applied < amount:
            self.record(key, consumer, 'release_below_zero', amount, applied)
        self.consumer_add(project, resource, consumer, -amount)
        return applied


def _database_state():
    books = Books()
    tables = models.Base.metadata.tables
    with db_api.get_engine().connect() as conn:
        for row in conn.execute(sa.select(tables['quota_usages'])):
            books.used[(row.project_id, row.resource)] = row.used
            books.reserved[(row.project_id, row.resource)] = row.reserved
        for row in conn.execute(sa.select(tables['consumer_usages'])):
            books.consumers[(row.project_id, row.resource,
                             row.consumer_id)] = row.used
        for row in conn.execute(sa.select(tables['drift_events'])):
            books.drift[(row.project_id, row.resource, row.consumer_id,
                         row.kind, row.requested, row.applied)] += 1
        table = tables['reservations']
        reservations = {row.uuid: (row.status, row.expire) for row in
                        conn.execute(sa.select(table.c.uuid, table.c.status,
                                               table.c.expire))}
    return books, reservations


class LedgerMachine(stateful.RuleBasedStateMachine):

    def __init__(self, clock):
        super().__init__()
        fixtures.clear_tables()
        self.clock = clock
        clock.now = START
        self.ctx = cyquota_context.get_admin_context()
        self.registered = {}
        self.own = {}
        self.books = Books()
        self.rows = {}
        #: When each refusal of a reserve naming a consumer was recorded.
        self.refusals = []
        self.purged_used = collections.Counter()

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

    def expect_reserve(self, project, deltas):
        """The exception a fresh reserve of ``deltas`` must raise, or None."""
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
        return (exception.OverQuota, overs) if overs else (None, None)

    # -- limits --------------------------------------------------------------

    @stateful.initialize(
        registered=st.dictionaries(st.sampled_from(RESOURCES),
                                   st.integers(-1, 6)),
        own=st.dictionaries(st.tuples(st.sampled_from(PROJECTS),
                                      st.sampled_from(RESOURCES)),
                            st.integers(0, 6)))
    def set_limits(self, registered, own):
        for resource, value in registered.items():
            self.change_limit(None, resource, value)
        for (project, resource), value in own.items():
            self.change_limit(project, resource, value)

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

    def _reserve(self, project, deltas, seconds, form, consumer,
                 request_id=None, dry_run=False):
        deltas = dict(sorted(deltas.items()))
        expire = self.clock.now + datetime.timedelta(
            seconds=seconds or DEFAULT_EXPIRE)
        given = {'seconds': seconds,
                 'datetime': seconds and expire.replace(tzinfo=UTC),
                 'iso': seconds and expire.isoformat() + '+00:00'}[form]
        call = dict(expire=given, request_id=request_id,
                    consumer_id=consumer, dry_run=dry_run)

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
        error, overs = self.expect_reserve(project, deltas)
        hypothesis.event('reserve: %s' % (error and error.__name__ or 'ok'))
        if error is not None:
            with pytest.raises(error) as caught:
                QUOTAS.reserve(self.ctx, project, deltas, **call)
            if overs:
                assert caught.value.overs == overs
                if consumer and not dry_run:  # findable by the consumer
                    self.refusals.append(self.clock.now)
            return
        uuids = QUOTAS.reserve(self.ctx, project, deltas, **call)
        if dry_run:
            assert uuids == []
            return
        assert len(set(uuids)) == len(deltas)
        assert not set(uuids) & set(self.rows)
        for uuid, (resource, delta) in zip(uuids, deltas.items()):
            self.rows[uuid] = Row(uuid, project, resource, delta, expire,
                                  request_id, consumer)
            if delta > 0:
                self.books.reserved[(project, resource)] += delta
                limit = self.limit(project, resource)
                assert limit < 0 or (
                    self.books.used[(project, resource)]
                    + self.books.reserved[(project, resource)] <= limit)

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
        mine = pending + pending + own
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
            for row in self.rows.values():
                if row in due:
                    self.books.settle(row, models.EXPIRED)
                    row.status, row.finished = models.EXPIRED, self.clock.now
            return
        hypothesis.event('%s: %d in batch' % (target, len(batch)))
        action(self.ctx, project, batch)
        # A batch is settled row by row in the order the rows were made.
        for row in self.rows.values():
            if row.uuid in batch and row.status == models.RESERVED:
                self.books.settle(row, target)
                row.status, row.finished = target, self.clock.now

    @stateful.rule(project=st.sampled_from(PROJECTS),
                   deltas=st.dictionaries(st.sampled_from(RESOURCES),
                                          st.integers(1, 3), min_size=1),
                   consumer=st.sampled_from(CONSUMERS))
    def release(self, project, deltas, consumer):
        deltas = dict(sorted(deltas.items()))
        uuids = QUOTAS.release(self.ctx, project, deltas, consumer_id=consumer)
        assert len(uuids) == len(deltas)
        for uuid, (resource, amount) in zip(uuids, deltas.items()):
            applied = self.books.release(project, resource, amount, consumer)
            self.rows[uuid] = Row(uuid, project, resource, -applied, None,
                                  None, consumer, models.COMMITTED,
                                  self.clock.now)

    @stateful.rule(seconds=st.sampled_from([0.5, 1, 2, 10, 3600]))
    def advance_time(self, seconds):
        self.clock.advance(seconds)

    @stateful.rule(seconds=st.sampled_from([0, 1, 2, 10]))
    def expire(self, seconds):
        """Let ``seconds`` pass, then expire what is due."""
        self.clock.advance(seconds)
        now = self.clock.now
        due = [r for r in self.rows.values()
               if r.status == models.RESERVED and r.expire < now]
        hypothesis.event('expire: %s' % bool(due))
        assert QUOTAS.expire(self.ctx) == len(due)
        for row in due:
            self.books.settle(row, models.EXPIRED)
            row.status, row.finished = models.EXPIRED, now

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
        books, reservations = _database_state()
        assert books == self.books
        assert reservations == {u: (r.status, r.expire)
                                for u, r in self.rows.items()}
        assert not [d for d in books.drift if d[3] == 'reserved_below_zero']
        assert min(itertools.chain(books.used.values(),
                                   books.reserved.values(),
                                   books.consumers.values()), default=0) >= 0

    @stateful.invariant()
    def counts_are_the_sum_of_the_rows(self):
        # reserved: the positive deltas of reserved rows; used: the deltas
        # of committed rows (releases included), plus what purge removed,
        # less what could not be taken (used_below_zero drift).
        reserved, used = collections.Counter(), collections.Counter(
            self.purged_used)
        for row in self.rows.values():
            key = (row.project, row.resource)
            if row.status == models.RESERVED and row.delta > 0:
                reserved[key] += row.delta
            elif row.status == models.COMMITTED:
                used[key] += row.delta
        for (project, resource, _, kind, requested, applied), n in \
                self.books.drift.items():
            if kind == 'used_below_zero':
                used[(project, resource)] += (applied - requested) * n
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
                assert usage[resource] == dict(
                    limit=limit, used=used, reserved=reserved, leased=0,
                    promised=0, available=-1 if limit < 0 else max(
                        0, limit - used - reserved))


def test_ledger_against_model(sqlite_db, monkeypatch):
    CONF.set_override('reservation_retention', 0, 'quota')
    clock = Clock(START)
    monkeypatch.setattr(timeutils, 'utcnow', clock)
    stateful.run_state_machine_as_test(
        lambda: LedgerMachine(clock),
        settings=hypothesis.settings(
            max_examples=40, stateful_step_count=50, deadline=None,
            database=None,
            suppress_health_check=[hypothesis.HealthCheck.too_slow]))
