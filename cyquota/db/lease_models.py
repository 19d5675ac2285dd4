"""SQLAlchemy models of leases: accelerators held for a time window.

A lease has one row per requested resource (``lease_reservations``); each
carries the lease's window and status too, so that the calendar of a
project (or a tree) is read from one indexed table without reading the
history of ended leases. Device allocations for the window are
``placement_models.LeaseAllocation`` rows.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types

PENDING = 'PENDING'
ACTIVE = 'ACTIVE'
ENDED = 'ENDED'
ERROR = 'ERROR'
STATUSES = (PENDING, ACTIVE, ENDED, ERROR)
#: Statuses of leases that count in calendars.
LIVE = (PENDING, ACTIVE)


class Lease(models.TimestampMixin, models.Base):
    """A lease of accelerators for ``[start_date, end_date)``."""

    __tablename__ = 'leases'
    __table_args__ = (
        # The pages of GET /v1/leases, newest first (created_at, id).
        sa.Index('leases_project_status_idx', 'project_id', 'status',
                 'created_at', 'id'),
        sa.Index('leases_created_idx', 'created_at', 'id'),
        sa.Index('leases_project_created_idx', 'project_id', 'created_at',
                 'id'),
        sa.Index('leases_status_start_idx', 'status', 'start_date'),
        sa.Index('leases_status_end_idx', 'status', 'end_date'),
        # What a project holds: its live leases, and its ERROR ones until
        # their end ([leases] max_leases_per_project).
        sa.Index('leases_project_status_end_idx', 'project_id', 'status',
                 'end_date'),
    )

    id = sa.Column(types.identifier(36), primary_key=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    user_id = sa.Column(types.identifier(255), nullable=True)
    name = sa.Column(sa.String(255), nullable=False)
    start_date = sa.Column(types.DateTime, nullable=False)
    end_date = sa.Column(types.DateTime, nullable=False)
    status = sa.Column(sa.String(16), nullable=False)
    status_reason = sa.Column(sa.String(1024), nullable=True)


class LeaseProject(models.TimestampMixin, models.Base):
    """A project that has made a lease: each lease create locks (and
    writes) its row, so that a project's creates count its leases one at a
    time ([leases] max_leases_per_project)."""

    __tablename__ = 'lease_projects'
    __table_args__ = (
        sa.CheckConstraint('live >= 0', name='ck_lease_projects_live'),
    )

    project_id = sa.Column(types.identifier(255), primary_key=True)
    #: The project's PENDING and ACTIVE leases: counted at create and end,
    #: so that a create never counts the project's leases in an index.
    live = sa.Column(sa.Integer, nullable=False, default=0,
                     server_default='0')


class LeaseReservation(models.TimestampMixin, models.Base):
    """One resource of a lease, with the lease's window, status and tree
    root copied, for calendar reads."""

    __tablename__ = 'lease_reservations'
    __table_args__ = (
        sa.Index('lease_reservations_lease_idx', 'lease_id'),
        # The calendar's reads: a level's live windows that start before
        # a new one ends (cyquota.lease_tables.overlaps), each index holding all
        # that the read returns, so that no row is looked up in the table.
        sa.Index('lease_reservations_project_window_idx', 'project_id',
                 'resource', 'status', 'start_date', 'end_date', 'amount',
                 'lease_id'),
        sa.Index('lease_reservations_root_window_idx', 'root_id',
                 'resource', 'status', 'start_date', 'end_date', 'amount',
                 'lease_id'),
        # The longest pending window (cyquota.lease_tables.overlaps).
        sa.Index('lease_reservations_status_span_idx', 'status', 'span'),
        sa.CheckConstraint('amount > 0', name='ck_lease_reservations_amount'),
    )

    id = sa.Column(types.identifier(36), primary_key=True)
    lease_id = sa.Column(types.identifier(36), sa.ForeignKey('leases.id'),
                         nullable=False)
    position = sa.Column(sa.Integer, nullable=False)
    project_id = sa.Column(types.identifier(255), nullable=False)
    #: The project's tree root when the lease was made (itself under flat).
    root_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    amount = sa.Column(sa.Integer, nullable=False)
    #: JSON list of Placement ``member_of`` values.
    member_of = sa.Column(sa.Text, nullable=False)
    member_key = sa.Column(types.identifier(255), nullable=True)
    start_date = sa.Column(types.DateTime, nullable=False)
    end_date = sa.Column(types.DateTime, nullable=False)
    status = sa.Column(sa.String(16), nullable=False)
    #: Seconds from start_date to end_date.
    span = types.span_column()
