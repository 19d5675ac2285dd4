"""Leases: accelerators held by a project for a time window, checked by
the usage-enforcement filters, and promised quota and devices over time.

``LEASES`` is the LeaseEngine (``engine``), what the REST API and the
conductor call; the lease events it tells (``events``) are heard by the
listeners start-up gives it (``cyquota.service.connect_hooks``).
``doc/source/leases.rst`` tells the semantics.
"""

from cyquota.leases.engine import LeaseEngine

LEASES = LeaseEngine()
