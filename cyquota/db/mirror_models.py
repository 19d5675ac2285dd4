"""SQLAlchemy models of the mirror of the cloud's Placement (``[placement]
source = placement``): when it was last copied, the generation of each
provider Placement listed then, the providers kept although Placement no
longer has them, and what Placement should hold for each lease written
back to it (``[placement] write_leases``).

The copy itself lives in the device tables of ``placement_models``.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types

#: The id of the ``placement_mirror`` row of the mirror's sync.
STATE_ID = 1
#: The id of the ``placement_mirror`` row of the periodic witness
#: (``cyquota.cloud.witness_rounds``): ``synced_at`` is when it last ran.
WITNESS_ID = 2


class MirrorState(models.Base):
    """The row of the mirror's state (``STATE_ID``), shared by every
    process: who claimed the current round of the periodic sync, when the
    copy last succeeded and why the last attempt failed; and the same of
    the periodic witness (``WITNESS_ID``)."""

    __tablename__ = 'placement_mirror'

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    claimed_at = sa.Column(types.DateTime, nullable=True)
    claimed_by = sa.Column(types.identifier(255), nullable=True)
    synced_at = sa.Column(types.DateTime, nullable=True)
    failed_at = sa.Column(types.DateTime, nullable=True)
    last_error = sa.Column(sa.String(1024), nullable=True)
    #: The mapped classes (``{placement class: resource}`` as JSON) that
    #: the generations of ``mirror_seen_providers`` were read with.
    seen_classes = sa.Column(sa.Text, nullable=True)


class SeenProvider(models.Base):
    """A provider Placement listed at the last sync, with its generation
    then: the next sync reads again only the providers whose generation
    moved (``cyquota.cloud.mirror_read``)."""

    __tablename__ = 'mirror_seen_providers'

    uuid = sa.Column(types.identifier(36), primary_key=True)
    generation = sa.Column(sa.Integer, nullable=False)
    #: Whether Placement showed allocations of mapped classes on it when it
    #: was last read: only those are read again while the generation
    #: stays (deleting an allocation does not move it).
    allocated = sa.Column(sa.Boolean, nullable=False)


class KeptProvider(models.Base):
    """A provider gone from Placement, kept because a live lease or
    reservation holds it (or a kept provider below it)."""

    __tablename__ = 'mirror_kept_providers'

    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    reason = sa.Column(sa.String(255), nullable=False)
    kept_at = sa.Column(types.DateTime, nullable=False)


class LeaseWrite(models.TimestampMixin, models.Base):
    """What the cloud's Placement should hold for one lease: its devices
    (``held``, from its start) or nothing (from its end).

    Written in the transaction that starts or ends the lease and applied to
    Placement after it (``cyquota.cloud.lease_writeback``). ``version``
    grows with each change of ``held``; a call to Placement counts as
    applied only while the version it applied is still the row's.
    """

    __tablename__ = 'placement_lease_writes'
    __table_args__ = (
        sa.Index('placement_lease_writes_applied_idx', 'applied', 'held',
                 'applied_at'),
    )

    lease_id = sa.Column(types.identifier(36), primary_key=True)
    held = sa.Column(sa.Boolean, nullable=False)
    version = sa.Column(sa.Integer, nullable=False)
    #: Whether Placement holds what ``held`` and ``version`` say.
    applied = sa.Column(sa.Boolean, nullable=False)
    applied_at = sa.Column(types.DateTime, nullable=True)
    #: When a process last took the row to apply it (two conductors do not
    #: both apply the same row in one lease interval).
    attempted_at = sa.Column(types.DateTime, nullable=True)
    #: Placement's refusal of the allocation, as the lease's
    #: ``status_reason`` says it; announced once per change.
    refusal = sa.Column(sa.String(1024), nullable=True)


class WitnessDrift(models.Base):
    """What the last run of the periodic witness found: per resource and
    figure (``used``, or ``leased`` with ``[placement] write_leases``),
    how many projects the ledger and Placement count differently; only
    figures that differ have a row."""

    __tablename__ = 'placement_witness_drift'

    resource = sa.Column(types.identifier(255), primary_key=True)
    field = sa.Column(sa.String(16), primary_key=True)
    projects = sa.Column(sa.Integer, nullable=False)
