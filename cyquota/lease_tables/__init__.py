"""The three lease tables (``leases``, ``lease_reservations``,
``lease_allocations``), which store a lease's status and window three
times: ``records`` is their one writer, each change to every copy at
once; ``calendar`` and ``overlaps`` their one reader (windows, peaks,
the copies' agreement). They import only ``cyquota.db``, so that the
ledger and the device model read them without the lease engine.
"""
