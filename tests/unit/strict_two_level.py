"""A strict-two-level project tree for the lease tests on the embedded
database: root over children a and b."""

import contextlib

from cyquota.conf import CONF
from cyquota.quota import QUOTAS


@contextlib.contextmanager
def root_over_a_and_b(pool, ctx):
    """Under ``[quota] enforcement_model = strict-two-level``, with a
    device dev3 of 8 FPGAs more in ``pool`` (a ``Tree``): projects a and
    b, children of root. The flat model is back after the block."""
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    QUOTAS.reset()
    pool.provider('dev3', parent='cn1', inventory={'FPGA': {'total': 8}})
    try:
        QUOTAS.limits.set_project(ctx, 'root')
        for child in ('a', 'b'):
            QUOTAS.limits.set_project(ctx, child, parent_id='root')
        yield
    finally:
        CONF.clear_override('enforcement_model', 'quota')
        QUOTAS.reset()
