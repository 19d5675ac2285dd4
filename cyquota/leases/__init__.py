"""Leases: accelerators held by a project for a time window, checked by
the usage-enforcement filters, and promised quota and devices over time.

``LEASES`` is the LeaseEngine (``engine``), what the REST API and the
conductor call, made on first use with the cloud's write-back listening
to its lease events (``events``). Made lazily, so that the rooms the
ledger and the device model read (``calendar``, ``overlaps``) and the
lease records' writer (``records``) come without the engine's.
``doc/source/leases.rst`` tells the semantics.
"""

import threading

_LOCK = threading.Lock()
_engine = None


def __getattr__(name):
    """``LEASES``: the process's LeaseEngine."""
    global _engine
    if name != 'LEASES':
        raise AttributeError(name)
    with _LOCK:
        if _engine is None:
            from cyquota.cloud import lease_writeback
            from cyquota.leases import engine
            from cyquota.leases import events
            events.listen(lease_writeback)
            _engine = engine.LeaseEngine()
    return _engine
