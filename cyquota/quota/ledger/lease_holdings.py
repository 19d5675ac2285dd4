"""What leases hold and promise, in the books.

A lease event (create, update, start, end) locks the project's rows as any
ledger transaction does (what the model's rule reads, then the project's
usage rows, with the project's limits where the model has them in SQL:
one query) and, under those locks:

* checks a lease's window: at every instant of it, the project's ordinary
  holdings now (``used - leased + reserved``: attaches are open-ended)
  plus every live lease overlapping the instant plus the new amount stay
  within the limit, at each level (the project, and its tree under
  strict-two-level);
* moves an active lease's amounts into ``used`` (and ``leased``) at its
  start, and out at its end, with the lease as the consumer;
* keeps ``promised`` on each level's row: the peak, from now on, of what
  pending leases will take. An ordinary reserve's conditional UPDATE reads
  it, so the common reserve stays one statement per resource. It only
  changes at lease events, and as time passes the true peak can only fall,
  so the stored value is never too small. A new pending lease can only
  raise it within its own window, so a create takes the larger of it and
  the window's new peak (from the windows its check read). The row also
  keeps an instant that holds the peak (``promised_at``): a pending lease
  that leaves (it starts, or ends early) outside that instant, which is
  still to come, leaves the peak as it is; otherwise the database
  recounts it (``calendar.promised``). So neither a create nor, most
  often, a start reads the project's whole future.

The windows come from the lease calendar (``cyquota.lease_tables.overlaps``),
one query for every level and resource of the event, read with the
devices' windows (``ask_windows``).
"""

import sqlalchemy as sa

from cyquota.budgets import lease_charges
from cyquota.budgets import rows as budget_rows
from cyquota.db import models
from cyquota.db import write_batch
from cyquota.lease_tables import calendar
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows
from cyquota.quota.limits import model as model_protocol


class LeaseHoldings:
    """A project's rows, locked for one lease event.

    Made by ``lock``; ``write`` stores what changed.
    """

    def __init__(self, conn, project_id, scope, usages):
        self._conn = conn
        self.project_id = project_id
        self._scope = scope
        self._usages = usages
        self._touched = set()
        self._seen = {}
        self._asked: tuple = ()  # What ask_windows asked.
        #: What ``spend`` charged and refunded, written by ``write``.
        self._spent = lease_charges.NOTHING
        #: ``{(table name, row id): promised_at}``, read when needed.
        self._instants = {}

    @classmethod
    def lock(cls, context, conn, model, project_id, resources):
        """Lock ``project_id``'s rows of ``resources`` in the ledger's
        order (creating missing ones)."""
        resources = sorted(set(resources))
        scope = model.lock(context, conn, project_id, resources, create=True)
        usages = usage_rows.lock(conn, project_id, resources, create=True,
                                 scope=scope, model=model)
        return cls(conn, project_id, scope, usages)

    def root_id(self, resource):
        """The root whose leases share the project's limits (the project
        itself when no level is above it)."""
        levels = self._scope.levels(resource)
        return levels[-1].holder_id if levels else self.project_id

    def _levels(self, resource):
        usage = self._usages[resource]
        limit = usage.limit
        if limit is None:  # Not read with the row.
            limit = self._scope.project_limits[resource]
        project = model_protocol.Level(
            'project', self.project_id, 'project_id', limit, usage,
            sql.USAGES)
        return [project] + self._scope.levels(resource)

    def ask_windows(self, overlaps, amounts, start, end,
                    exclude_lease=None):
        """Ask ``overlaps`` (an ``overlaps.Overlaps``) for the windows at
        every level that ``window_overs`` checks ``amounts``
        ({resource: amount}) held over ``[start, end)`` against: all
        levels' in one query, with what else it is asked.
        ``exclude_lease``: a lease being changed, whose own holdings do
        not count (an active one's are in ``leased``, which the ordinary
        holdings leave out)."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for resource in amounts:
            for level in self._levels(resource):
                wanted.setdefault((level.calendar_key, level.holder_id),
                                  set()).add(resource)
        self._asked = (dict(amounts), start, end, {
            (key, holder_id): overlaps.levels(key, holder_id, of, start,
                                              end, exclude_lease)
            for (key, holder_id), of in sorted(wanted.items())})

    def window_overs(self):
        """The ``overs`` entries if the amounts ``ask_windows`` asked for
        would break a limit at some instant of their window (empty when
        they fit). Remembers the windows read for ``promise``."""
        amounts, start, end, asked = self._asked
        self._seen = {
            (key, holder_id, resource): windows
            for (key, holder_id), each in asked.items()
            for resource, windows in each.windows().items()}
        overs = []
        for resource, amount in sorted(amounts.items()):
            for level in self._levels(resource):
                if level.limit < 0:
                    continue
                counts = level.counts
                ordinary = counts.used - counts.leased + counts.reserved
                held = calendar.peak(self._seen[
                    level.calendar_key, level.holder_id, resource],
                    start, end)
                if ordinary + held + amount > level.limit:
                    entry = model_protocol.over_entry(
                        level.holder_id, resource, level.scope, level.limit,
                        counts, amount)
                    # What other leases hold at the window's peak.
                    entry['leases'] = held
                    overs.append(entry)
        return overs

    def _at(self, level):
        """The instant the level's ``promised`` is held (None: unknown),
        read for every level of the event at once (a query per table)."""
        key = (level.table.name, level.counts.id)
        if key not in self._instants:
            ids: dict[sa.Table, set[int]] = {}
            for resource in self._usages:
                for each in self._levels(resource):
                    ids.setdefault(each.table, set()).add(each.counts.id)
            for table, found in ids.items():
                for row_id, at in self._conn.execute(
                        sa.select(table.c.id, table.c.promised_at)
                        .where(table.c.id.in_(sorted(found)))):
                    # What this event has set already stands.
                    self._instants.setdefault((table.name, row_id), at)
        return self._instants[key]

    def _keep(self, level, peak, at):
        level.counts.promised = peak
        self._instants[level.table.name, level.counts.id] = at

    def promise(self, amounts, start, end):
        """A new pending lease will hold ``amounts`` over ``[start, end)``
        (checked by ``window_overs`` just before): ``promised`` at every
        level becomes at least the window's pending peak with it."""
        for resource, amount in sorted(amounts.items()):
            for level in self._levels(resource):
                pending = [w for w in self._seen[
                    level.calendar_key, level.holder_id, resource]
                    if w.pending]
                pending.append(calendar.Window(start, end, amount, True))
                peak, at = calendar.peak_at(pending, start, end)
                if peak > level.counts.promised:
                    self._keep(level, peak, at)
            self._touched.add(resource)

    def release(self, resources, start, end, now=None):
        """A pending lease over ``[start, end)`` of ``resources`` has left
        the calendar (started or ended; its rows already say so). Where the
        level's peak is held at a known instant from ``now`` on outside
        the window, it stands; elsewhere it is recounted (``refresh``).
        """
        now = now or models.utcnow()
        recount = set()
        for resource in resources:
            for level in self._levels(resource):
                if not level.counts.promised:
                    continue  # Nothing pending: nothing to give back.
                at = self._at(level)
                if at is None or at < now or start <= at < end:
                    recount.add(resource)
        if recount:
            self.refresh(sorted(recount), now)

    def start(self, resource, amount, lease_id):
        """An active lease now holds ``amount``: into ``used`` and
        ``leased``, with the lease as the consumer."""
        usage = self._usages[resource]
        usage.add('leased', amount)
        for level in self._scope.levels(resource):
            level.counts.leased += amount
        usage.add('used', amount)
        consumers.add(self._conn, self.project_id, resource, lease_id,
                      amount)
        self._touched.add(resource)

    def end(self, resource, amount, lease_id):
        """An active lease gives ``amount`` back (never below zero)."""
        usage = self._usages[resource]
        usage.take('leased', amount)
        for level in self._scope.levels(resource):
            level.counts.leased = max(0, level.counts.leased - amount)
        applied = usage.take('used', amount)
        if applied < amount:
            usage_rows.record_drift(
                self._conn, self.project_id, resource, lease_id,
                'used_below_zero', amount, applied,
                'end of lease %s' % lease_id)
        consumers.add(self._conn, self.project_id, resource, lease_id,
                      -amount)
        self._touched.add(resource)

    def spend(self, lease_id, before, after, actor, reason, now=None):
        """Charge and refund the budgets of every level (the project's,
        its tree's) for lease ``lease_id`` going from plan ``before`` to
        plan ``after`` (``lease_charges.Plan``, None: none), written by
        ``write``; BudgetExhausted (403) when a charge does not fit. Once
        an event, before any change in memory of ``used`` or ``leased``:
        the balances are those of the rows as locked."""
        self._spent = lease_charges.move(
            self._conn, {r: self._levels(r) for r in sorted(self._usages)},
            lease_id, before, after, now or models.utcnow(), actor, reason)
        self._touched.update(resource for resource, _s in self._spent.moves)

    def refresh(self, resources, now=None):
        """Recompute ``promised`` of ``resources`` at every level: the
        peak of pending leases from ``now`` on (one query per level)."""
        now = now or models.utcnow()
        wanted: dict[tuple[str, str], list] = {}
        for resource in resources:
            for level in self._levels(resource):
                wanted.setdefault((level.calendar_key, level.holder_id),
                                  []).append((resource, level))
        for (key, holder_id), found in sorted(wanted.items(),
                                              key=lambda item: item[0]):
            peaks = calendar.promised(self._conn, key, holder_id,
                                      {resource for resource, _l in found},
                                      now)
            for resource, level in found:
                self._keep(level, *peaks[resource])
                self._touched.add(resource)

    def write(self, batch=None):
        """Store the changed counts (the usage rows' ``used`` and
        ``leased`` together, their meters moved in the same write, and the
        levels above the project with them), then ``promised`` of every
        level touched and what ``spend`` charged (its entries, each
        level's ``budget_base``): as writes of ``batch`` (a
        ``write_batch.WriteBatch`` the caller sends) if given, else in one
        batch now."""
        sending = batch is None
        if sending:
            batch = write_batch.WriteBatch(self._conn)
        usage_rows.write(self._conn, self._usages, self._scope)
        now = models.utcnow()
        moves = self._spent.moves
        batch.insert(budget_rows.ENTRIES, self._spent.entries)
        for resource in sorted(self._touched):
            for level in self._levels(resource):
                table = level.table
                values = dict(promised=level.counts.promised, updated_at=now)
                if (resource, level.scope) in moves:
                    values['budget_base'] = (level.counts.budget_base
                                             + moves[resource, level.scope])
                if (table.name, level.counts.id) in self._instants:
                    values['promised_at'] = self._instants[
                        table.name, level.counts.id]
                batch.update(table, level.counts.id, values)
        if sending:
            batch.send()
