"""Leases: accelerators held by a project for a time window, checked by
the usage-enforcement filters, and promised quota and devices over time.

``LEASES`` is the LeaseEngine (``engine``), what the REST API and the
conductor call. ``doc/source/leases.rst`` tells the semantics.
"""

from cyquota.leases.engine import LeaseEngine

LEASES = LeaseEngine()
