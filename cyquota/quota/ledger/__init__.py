"""The ledger: per (project, resource) ``used`` and ``reserved`` counts,
reservation rows, what consumers hold, and the locks that keep them right.

One concept a module: ``statements`` (the SQL, built once),
``one_statement`` (the one-round-trip forms of them), ``usage``
(usage rows locked and written, drift events), ``consumers``, ``reserve``,
``settle`` (commit, rollback, expiry), ``release``, ``reads`` and
``upkeep`` (purge, and the locked corrections that repair applies) and
``lease_holdings`` (what leases hold and promise). The
ledger asks the enforcement model (``cyquota.quota.limits.model``) what a
project may take and claims devices through the device hook it is given;
it imports nothing of either.

Locking discipline, the whole of the ledger's concurrency story:

* Locks are taken in one order, so transactions queue rather than
  deadlock: the reservation rows a transaction ends (commit, rollback,
  expiry) or the lease's row a lease event changes, then what the
  enforcement model's rule reads (under strict-two-level, the
  ``tree_usages`` rows of the project's root), then the project's
  ``quota_usages`` rows in resource order, then ``consumer_usages`` rows,
  then device providers (a claim's update of their generations). The rare
  deadlock or lost race to create a first row is retried as a whole
  transaction (``db_api.retry_on_conflict``).
* A reservation's status changes only from ``reserved``, and only while
  its row is locked, so each reservation ends exactly once; its resource
  and delta never change, so they may be read unlocked.
* When the model lets a project's own row decide (flat), the common cases
  change each count with one conditional UPDATE rather than locking and
  reading the usage row first: a reserve adds a positive delta to
  ``reserved`` only where ``used + reserved + delta`` (and ``promised``)
  fits the limit (which the statement reads itself when the limits are in
  this database), or takes a negative one (a detach) only where ``used``
  covers it; an end moves counts only where none goes below zero. When
  such an UPDATE changes no row (no row yet, over quota, drift, or a
  reserve's request id was seen before), the locked path decides: it
  locks the rows with ``SELECT ... FOR UPDATE``, reads them, and says
  exactly why (a reserve rolls its attempt back first).
* On PostgreSQL and MariaDB each of these common operations, of one
  resource or of several, is one statement that is its own transaction,
  one round trip in which the lock order above holds too: how, server by
  server, is told once, in ``one_statement``. Whatever it leaves, the
  steps decide, as on SQLite, where each step is one statement for every
  resource. The steps are written in their plain form and ask the
  database's backend (``cyquota.db.backends``) for each faster one (a
  batch, UPDATE ... RETURNING, an upsert, a planner hint); they never
  name a server.
* Every read that follows a lock sees all that was committed under it:
  PostgreSQL runs READ COMMITTED, and cyquota sets MySQL/MariaDB sessions
  to READ COMMITTED too (``db_api``).
* Under strict-two-level a transaction locks the ``tree_usages`` rows of
  the project's root before the project's own rows, and changes the
  root's rows by what it changed in the project's. Reservations in
  different children of one root queue on the root's rows, so the tree
  check sees every earlier one.
* Device allocations are claimed inside the reserve's transaction, after
  the usage rows (``cyquota.placement.allocations`` writes them against
  the chosen providers' generations, which locks those rows). The common
  claim (one class, no ``member_of``, no member key) is a step of the
  reserve's one statement, in the same order: the usage row, then the
  chosen provider's generation (``cyquota.placement.claim_steps``,
  through the device hook).

The meter (SPEC 3.8, ``cyquota.db.meter``): each usage row meters what
its project holds by attaches, ``used - leased`` unit-seconds, up to the
instant of its last write. Every UPDATE that changes ``used`` or
``leased`` (a locked row written back, an end's relative UPDATE, each
one statement's, a lease's start or end) moves the meter to the
operation's instant first, in that same write (its terms first: MariaDB
evaluates SET left to right), so a balance is exact to the second
without a sweep and costs no statement more. A reserve that adds
holdings to a row with a budget (``budget_base``) whose balance is at or
below zero is refused in the conditional UPDATE's own WHERE (the locked
path then says why: ``BudgetExhausted``), under the same locks as the
limit; a detach, a commit, an end of lease never are.

Input is validated by the QuotaEngine before it reaches the ledger.
"""
