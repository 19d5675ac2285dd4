"""cyquota-policy-example: an example usage-enforcement service for
ExternalServiceFilter, the seed's "pre-pay" accelerator-hours budget.

Each project has a budget of accelerator-hours per rolling window. A lease
costs, summed over its reservations, ``amount x (end_date - start_date)``
in hours. ``check-create`` charges that cost when it is accepted, and
refuses (403) a lease whose cost, plus the charges the project was given
in the last window, exceeds the budget. ``check-update`` re-prices the
lease: its charge is replaced by the new cost (refused if that exceeds the
budget; an update that costs no more is always allowed). ``on-end`` refunds
the unused time of a lease that ended before its ``end_date``. A lease is
known by its ``id``, else (Blazar's check-create sends none) by its name
within its project. It serves Blazar too: naive dates are read as UTC and
a ``physical:host`` reservation is charged for its ``max`` hosts.

Modules: :mod:`.store` (the charges, in SQLite), :mod:`.policy` (the
decisions), :mod:`.app` (the WSGI app), :mod:`.server` (the command).
"""
