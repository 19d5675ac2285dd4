"""A model-based test of accelerator-hour budgets (SPEC 3.8), run on the
database cyquota points at (SQLite: tests/unit/test_budget_model.py;
PostgreSQL and MariaDB: tests/functional/test_budget_model_backends.py).

Hypothesis draws the steps of one project's GPU budget over hours of
hourly periods: budgets set, changed (reset or carry, with or without a
cap), credited and deleted; attaches reserved and committed or released;
leases accepted (now or later), started, ended on time or early, and
changed; time passing by seconds or across period boundaries; and the
conductor's roll-over, run late or not at all for a while, twice each
time (the second finds nothing). The model keeps the balance the way a
reader of SPEC 3.8 would, with no meter: a balance at an instant, falling
by what attaches hold per second, moved by each entry, refilled at the
period's start; charges of later periods wait for them. After every
step the books must show the model's balance to the second, the
leases' charges of the period, and prove themselves (``budget check``).

Run with ``tree``, the same steps go under strict-two-level, the budget
set on a root whose child attaches and leases too: the root's budget
covers the tree (SPEC 3.8), so the model is the same one balance, spent
by what both hold, and the usage documents of both show it in ``tree``.
"""

import collections
import datetime
import itertools

import hypothesis
from hypothesis import stateful
from hypothesis import strategies as st
from oslo_utils import timeutils

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import document
from cyquota.budgets import lease_charges
from cyquota.budgets import rollover
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit.test_engine import Clock

PROJECT = 'p1'
#: A child of PROJECT, in a tree run.
CHILD = 'c1'
GPU = 'GPU'
#: Periods of an hour from START (a Monday at midnight).
PERIOD = 3600
START = datetime.datetime(2030, 1, 7)

HOURS = st.sampled_from([0, 0.25, 0.5, 1, 2])
SECONDS = st.sampled_from([1, 59, 600, 1799])
OFFSETS = st.sampled_from([0, 0, 900, 3000, 5400])
LENGTHS = st.sampled_from([60, 1800, 3600, 7300])


def _start_of(instant):
    """The start of the hourly period holding ``instant`` (Unix s)."""
    return instant - instant % PERIOD


def parts(amount, start, end):
    """``{period start: unit-seconds}`` of ``amount`` held over ``[start,
    end)`` (Unix s), cut at the hours."""
    cut = {}
    while start < end:
        period = _start_of(start)
        until = min(end, period + PERIOD)
        cut[period] = cut.get(period, 0) + amount * (until - start)
        start = until
    return cut


class Model:
    """One budget as SPEC 3.8 tells it: a balance that attaches spend per
    second, moved by every entry, refilled at each period's start."""

    def __init__(self, now):
        self.budget = None  # {seconds, refill, cap} once set
        self.books = None  # the period the books are in
        self.balance = None
        self.at = now  # the instant ``balance`` holds for
        #: (the start of the period of ``at``, the balance then), once
        #: ``follow`` has passed it.
        self.at_start = None
        self.holding = 0  # what attaches hold
        #: Leases' net charges of periods after the books', by period.
        self.pending = collections.Counter()
        #: Every lease's net charge by period: ``{lease: Counter}``.
        self.charged = {}

    def follow(self, now):
        """Move the balance to ``now``, noting what it was at the start
        of the period of ``now`` when that is passed."""
        if self.balance is not None:
            start = _start_of(now)
            if self.at < start:
                self.at_start = (
                    start, self.balance - self.holding * (start - self.at))
            self.balance -= self.holding * (now - self.at)
        self.at = now

    def roll(self, now):
        """The roll-over's refill, once the books' period has ended: at
        the start of the period of ``now``, with the charges waiting."""
        self.follow(now)
        start = _start_of(now)
        if self.budget is None or self.books >= start:
            return False
        _start, balance = self.at_start
        assert _start == start
        seconds, cap = self.budget['seconds'], self.budget['cap']
        if self.budget['refill'] == 'reset':
            refill = seconds - balance
        elif cap is None:
            refill = seconds
        else:
            refill = max(0, min(seconds, cap - balance))
        self.balance += refill + sum(
            self.pending.pop(p) for p in list(self.pending) if p <= start)
        self.books = start
        return True

    def set(self, now, seconds, refill, cap):
        self.roll(now)
        self.follow(now)
        if self.budget is None:
            self.books = _start_of(now)
            self.balance = seconds + sum(
                self.pending.pop(p) for p in list(self.pending)
                if p <= self.books)
        else:
            self.balance += seconds - self.budget['seconds']
        self.budget = dict(seconds=seconds, refill=refill, cap=cap)

    def delete(self, now):
        self.roll(now)
        self.budget = self.balance = self.books = None

    def fits(self, change):
        """The (period, balance, asked) a charge of ``change``
        (``{period: seconds}``) does not fit, else None."""
        for period, asked in sorted(change.items()):
            if asked <= 0:
                continue
            left = (self.balance if period == self.books
                    else self.budget['seconds'] + self.pending[period])
            if asked > left:
                return period, left, asked
        return None

    def spend(self, lease, change):
        """Book a lease's change of plan (``{period: seconds}``)."""
        if self.budget is None:
            return
        charged = self.charged.setdefault(lease, collections.Counter())
        for period, asked in sorted(change.items()):
            if asked < 0:  # A refund: never more than was charged.
                asked = -min(-asked, max(0, charged[period]))
            charged[period] += asked
            if period == self.books:
                self.balance -= asked
            else:
                self.pending[period] -= asked


class BudgetMachine(stateful.RuleBasedStateMachine):

    def __init__(self, clock, tree):
        super().__init__()
        fixtures.clear_tables()
        self.clock = clock
        clock.now = START
        self.ctx = cyquota_context.get_admin_context()
        #: The projects that attach and lease (a root and its child in a
        #: tree run).
        self.members = [PROJECT]
        if tree:
            QUOTAS.limits.set_project(self.ctx, PROJECT)
            QUOTAS.limits.set_project(self.ctx, CHILD, parent_id=PROJECT)
            self.members.append(CHILD)
        self.model = Model(self.now_s())
        #: ``{lease id: [amount, start, end, active, member]}`` (Unix s).
        self.leases = {}
        #: What each member holds by attaches.
        self.held = collections.Counter()
        self.numbers = itertools.count(1)

    def now_s(self):
        return meter.seconds(self.clock.now)

    def _instant(self, seconds):
        return datetime.datetime.utcfromtimestamp(seconds)

    # -- budgets -------------------------------------------------------------

    @stateful.initialize(hours=st.sampled_from([None, 1, 2]))
    def start_with(self, hours):
        """Most runs start with a budget: the paths that charge it."""
        if hours is not None:
            self.set_budget(hours, 'reset', False)

    @stateful.rule(hours=HOURS, refill=st.sampled_from(['reset', 'carry']),
                   capped=st.booleans())
    def set_budget(self, hours, refill, capped):
        cap = 2 * hours if capped and refill == 'carry' else None
        books.set_budget(self.ctx, PROJECT, GPU, hours, refill, cap,
                         model=QUOTAS.limits.model)
        self.model.set(self.now_s(), round(hours * 3600), refill,
                       None if cap is None else round(cap * 3600))

    @stateful.rule()
    def delete_budget(self):
        try:
            books.delete_budget(self.ctx, PROJECT, GPU)
        except exception.BudgetNotFound:
            assert self.model.budget is None
            return
        self.model.delete(self.now_s())

    @stateful.precondition(lambda self: self.model.budget is not None)
    @stateful.rule(hours=st.sampled_from([0.1, 1]))
    def credit(self, hours):
        books.credit(self.ctx, PROJECT, GPU, hours, 'a test')
        self.model.roll(self.now_s())
        self.model.follow(self.now_s())
        self.model.balance += round(hours * 3600)

    # -- attaches ------------------------------------------------------------

    @stateful.rule(delta=st.sampled_from([1, 1, 2, -1]), data=st.data())
    def attach(self, delta, data):
        """Reserve and commit ``delta`` GPUs held by attaches of a member
        (a detach when negative); a budget at or below zero refuses an
        attach."""
        model = self.model
        model.follow(self.now_s())
        member = data.draw(st.sampled_from(self.members))
        if delta < 0 and self.held[member] < -delta:
            return
        refused = delta > 0 and model.balance is not None and (
            model.balance <= 0)
        try:
            uuids = QUOTAS.reserve(self.ctx, member, {GPU: delta})
        except exception.BudgetExhausted as error:
            assert refused, error
            assert error.kwargs['balance_hours'] == meter.hours(
                model.balance)
            return
        assert not refused
        QUOTAS.commit(self.ctx, member, uuids)
        model.holding += delta
        self.held[member] += delta

    # -- leases --------------------------------------------------------------

    def _spend(self, lease_id, before, after, event=None, amount=0):
        """A lease event as the lease engine runs it: the rows of the
        lease's member locked, the plans' difference charged or refunded,
        then (``event``: 'start' or 'end') ``amount`` moved."""
        member = (after or before)[4]
        with db_api.writer_connection(self.ctx) as conn:
            holdings = QUOTAS.lease_holdings(self.ctx, conn, member, [GPU])
            holdings.spend(lease_id, self._plan(before), self._plan(after),
                           'u1', 'a test', self.clock.now)
            if event is not None:
                getattr(holdings, event)(GPU, amount, lease_id)
            holdings.write()

    def _plan(self, lease):
        if lease is None:
            return None
        amount, start, end, _active, _member = lease
        return lease_charges.Plan({GPU: amount}, self._instant(start),
                                  self._instant(end))

    def _change(self, before, after):
        """``{period: seconds}`` that plan ``after`` takes more than plan
        ``before`` from now on (less: negative)."""
        now = self.now_s()
        change = collections.Counter()
        for lease, sign in ((after, 1), (before, -1)):
            if lease is not None:
                amount, start, end, _active, _member = lease
                for period, seconds in parts(amount, max(start, now),
                                             end).items():
                    change[period] += sign * seconds
        return {period: s for period, s in change.items() if s}

    def _expect(self, lease_id, before, after, event=None, amount=0):
        """Run a lease event of plans ``before`` -> ``after`` (then
        ``event`` of ``amount``, as ``_spend``) against the model; whether
        it was accepted."""
        model = self.model
        model.follow(self.now_s())
        change = self._change(before, after)
        over = model.fits(change) if model.budget is not None else None
        try:
            self._spend(lease_id, before, after, event, amount)
        except exception.BudgetExhausted as error:
            assert over is not None, error
            period, left, asked = over
            assert (error.kwargs['period_start'],
                    error.kwargs['balance_hours'],
                    error.kwargs['requested_hours']) == (
                self._instant(period).isoformat() + '+00:00',
                meter.hours(left), meter.hours(asked))
            return False
        assert over is None, over
        model.spend(lease_id, change)
        return True

    @stateful.rule(amount=st.integers(1, 2), offset=OFFSETS, length=LENGTHS,
                   data=st.data())
    def accept_lease(self, amount, offset, length, data):
        lease_id = 'lease-%d' % next(self.numbers)
        start = self.now_s() + offset
        lease = [amount, start, start + length, offset == 0,
                 data.draw(st.sampled_from(self.members))]
        if self._expect(lease_id, None, lease,
                        'start' if offset == 0 else None, amount):
            self.leases[lease_id] = lease

    @stateful.rule()
    def start_and_end_due(self):
        """The periodic work: pending leases whose start has come start,
        active ones whose end has come end; no charge moves."""
        now = self.now_s()
        for lease_id, lease in sorted(self.leases.items()):
            amount, start, end, active, _member = lease
            if not active and start <= now:
                self._spend(lease_id, lease, lease, 'start', amount)
                lease[3] = True
            if lease[3] and end <= now:
                self._spend(lease_id, lease, lease, 'end', amount)
                del self.leases[lease_id]

    @stateful.precondition(lambda self: self.leases)
    @stateful.rule(data=st.data())
    def end_early(self, data):
        """A DELETE: an active lease ends now, a pending one is
        cancelled; what it will not hold is refunded."""
        lease_id = data.draw(st.sampled_from(sorted(self.leases)))
        lease = self.leases.pop(lease_id)
        amount, start, end, active, member = lease
        if active:  # It held what it was charged until now.
            assert self._expect(lease_id, lease,
                                [amount, start, self.now_s(), True, member],
                                'end', amount)
        else:
            assert self._expect(lease_id, lease, None)

    @stateful.precondition(lambda self: self.leases)
    @stateful.rule(data=st.data(), grow=st.integers(0, 1),
                   length=LENGTHS)
    def change_lease(self, data, grow, length):
        """An update: a new end (after now and its start) and, by
        ``grow``, a larger amount."""
        lease_id = data.draw(st.sampled_from(sorted(self.leases)))
        lease = self.leases[lease_id]
        amount, start, _end, active, member = lease
        after = [amount + grow, start,
                 max(start, self.now_s()) + length, active, member]
        if self._expect(lease_id, lease, after,
                        'start' if active and grow else None, grow):
            self.leases[lease_id] = after

    # -- time and the roll-over ----------------------------------------------

    @stateful.rule(seconds=SECONDS)
    def wait(self, seconds):
        self.clock.advance(seconds)

    @stateful.rule(past=st.sampled_from([0, 1, 30]))
    def to_the_next_period(self, past):
        self.clock.now = self._instant(
            _start_of(self.now_s()) + PERIOD + past)

    @stateful.rule()
    def roll_over(self):
        moved = self.model.roll(self.now_s())
        hypothesis.event('roll-over moves the books: %s' % moved)
        assert rollover.roll_all(self.ctx) == int(moved)
        assert rollover.roll_all(self.ctx) == 0

    # -- what must hold ------------------------------------------------------

    @stateful.invariant()
    def the_books_show_the_model(self):
        model = self.model
        model.follow(self.now_s())
        shown = document.show(self.ctx, PROJECT)['resources']
        if model.budget is None:
            assert shown == {}
            return
        gpu = shown[GPU]
        assert gpu['remaining_hours'] == meter.hours(model.balance)
        assert gpu['period_start'] == self._instant(model.books)
        charged = sum(c[model.books] for c in model.charged.values())
        assert gpu['charged_hours'] == meter.hours(charged)
        for member in self.members:
            usage = QUOTAS.get_project_usage(self.ctx, member)[GPU]
            if len(self.members) > 1:  # The root's budget covers the tree.
                assert 'remaining_hours' not in usage
                usage = usage['tree']
            assert usage['remaining_hours'] == meter.hours(model.balance)

    @stateful.invariant()
    def the_books_prove_themselves(self):
        assert check.disagreements(self.ctx) == []


def run(monkeypatch, examples, steps, tree=False):
    """Run the machine ``examples`` times, ``steps`` steps at the most, on
    the database cyquota points at, with time standing still but when a
    rule moves it, and periods of an hour; with ``tree``, under
    strict-two-level with a root's budget over it and its child."""
    CONF.set_override('period', 'PT1H', 'budgets')
    if tree:
        CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    QUOTAS.reset()
    clock = Clock(START)
    monkeypatch.setattr(timeutils, 'utcnow', clock)
    try:
        fixtures.run_machine(lambda: BudgetMachine(clock, tree), examples,
                             steps)
    finally:
        CONF.clear_override('period', 'budgets')
        CONF.clear_override('enforcement_model', 'quota')
        QUOTAS.reset()
