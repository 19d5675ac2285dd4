"""Device selection (Placement): accelerator devices as resource providers.

Devices are nested resource providers (a compute node and its devices),
with inventories, aggregates (with metadata) and traits; allocation
candidates honour ``member_of`` with required and forbidden aggregates
exactly as Placement microversion 1.32+ does, and lease pools stay apart
from ordinary requests by aggregate metadata prefixes.

* ``member_of``: the ``member_of`` parser; ``request``: a device request
  (``GET /allocation_candidates`` query) parsed;
* ``providers``, ``inventories``, ``aggregates``, ``traits``: the objects,
  over the database, with provider generations;
* ``capacity``: room per provider and resource class;
* ``pools``: the lease-pool rule; ``candidates``: the search;
* ``allocations``: ``claim`` and ``free``, safe under concurrency.
"""
