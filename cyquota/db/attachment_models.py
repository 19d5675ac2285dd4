"""SQLAlchemy models of what the agents report as really attached.

Each host's agent sends its full list of attachments; the latest report per
host replaces the one before. Reconciliation compares the sum over hosts
with the ledger's counts.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types


class HostReport(models.Base):
    """The latest attachment report of one host.

    Its row is locked while the host's allocations are replaced, so two
    reports of one host never interleave.
    """

    __tablename__ = 'host_reports'

    host = sa.Column(types.identifier(255), primary_key=True)
    reported_at = sa.Column(types.DateTime, nullable=False)
    created_at = sa.Column(types.DateTime, nullable=False,
                           default=models.utcnow)


class HostAllocation(models.Base):
    """What one consumer really holds of a resource on a host."""

    __tablename__ = 'host_allocations'
    __table_args__ = (
        # 3 x 255 utf8mb4 characters: under InnoDB's 3072-byte key limit.
        sa.UniqueConstraint('host', 'consumer_id', 'resource',
                            name='uniq_host_allocations0host0consumer0res'),
        sa.Index('host_allocations_project_resource_idx', 'project_id',
                 'resource'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    host = sa.Column(types.identifier(255), sa.ForeignKey('host_reports.host'),
                     nullable=False)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    consumer_id = sa.Column(types.identifier(255), nullable=False)
    amount = sa.Column(sa.Integer, nullable=False)
