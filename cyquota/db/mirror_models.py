"""SQLAlchemy models of the mirror of the cloud's Placement (``[placement]
source = placement``): when it was last copied, and the providers kept
although Placement no longer has them.

The copy itself lives in the device tables of ``placement_models``.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types

#: The id of the one ``placement_mirror`` row.
STATE_ID = 1


class MirrorState(models.Base):
    """The one row of the mirror's state, shared by every process: who
    claimed the current round of the periodic sync, when the copy last
    succeeded and why the last attempt failed."""

    __tablename__ = 'placement_mirror'

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    claimed_at = sa.Column(types.DateTime, nullable=True)
    claimed_by = sa.Column(sa.String(255), nullable=True)
    synced_at = sa.Column(types.DateTime, nullable=True)
    failed_at = sa.Column(types.DateTime, nullable=True)
    last_error = sa.Column(sa.String(1024), nullable=True)


class KeptProvider(models.Base):
    """A provider gone from Placement, kept because a live lease or
    reservation holds it (or a kept provider below it)."""

    __tablename__ = 'mirror_kept_providers'

    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    reason = sa.Column(sa.String(255), nullable=False)
    kept_at = sa.Column(types.DateTime, nullable=False)
