"""SQLAlchemy models of the ledger and the embedded limit store.

The ledger follows the Cyborg quota spec: one ``quota_usages`` row per
(project, resource) and one ``reservations`` row per resource of every
reserve, commit-at-once release included. ``consumer_usages`` keeps what each
consumer holds, so reconciliation has a source of truth that survives the
purge of old reservation rows.
"""

import typing

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy import orm

from cyquota.db import types

# Counts are stored in 32-bit signed integers (the Cyborg spec's int(11)).
MAX_COUNT = 2 ** 31 - 1

RESERVED = 'reserved'
COMMITTED = 'committed'
ROLLED_BACK = 'rolled_back'
EXPIRED = 'expired'
STATUSES = (RESERVED, COMMITTED, ROLLED_BACK, EXPIRED)
TERMINAL_STATUSES = (COMMITTED, ROLLED_BACK, EXPIRED)


def utcnow():
    """Naive UTC now, the form every timestamp column holds."""
    return timeutils.utcnow()


class Base(orm.DeclarativeBase):
    # Declared for the type check: every model has a Table, whose Core
    # insert/update/delete the ledger and placement use.
    __table__: typing.ClassVar[sa.Table]


class TimestampMixin:
    created_at = sa.Column(types.DateTime, nullable=False, default=utcnow)
    updated_at = sa.Column(types.DateTime, nullable=True, onupdate=utcnow)


class MeterMixin:
    """The meter of accelerator-seconds (``cyquota.db.meter``) of a row
    that counts ``used`` and ``leased``, and the budget it carries."""

    #: The unit-seconds of ordinary holdings (``used - leased``) up to
    #: ``metered_at`` (Unix seconds; None: never metered, nothing to add).
    # The server's default only: an INSERT of a row stays as it was.
    metered = sa.Column(sa.BigInteger, nullable=False, server_default='0')
    metered_at = sa.Column(sa.BigInteger, nullable=True)
    #: The meter at the start of period ``marked_period`` (Unix seconds),
    #: taken by the first change in that period: the roll-over closes the
    #: period before at that exact value.
    metered_mark = sa.Column(sa.BigInteger, nullable=True)
    marked_period = sa.Column(sa.BigInteger, nullable=True)
    #: Of a budgeted row (else None): the balance plus the meter, in
    #: unit-seconds, so that the balance is ``budget_base - meter now``,
    #: read on this row by the reserve that changes it.
    budget_base = sa.Column(sa.BigInteger, nullable=True)


class QuotaUsage(MeterMixin, TimestampMixin, Base):
    """What a project uses and holds reserved of one resource."""

    __tablename__ = 'quota_usages'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_usages0project_id0resource'),
        sa.CheckConstraint('used >= 0', name='ck_quota_usages_used'),
        sa.CheckConstraint('reserved >= 0', name='ck_quota_usages_reserved'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    used = sa.Column(sa.Integer, nullable=False, default=0)
    reserved = sa.Column(sa.Integer, nullable=False, default=0)
    #: The peak, from now on, of what pending leases are promised (an
    #: ordinary reserve must leave room for it); kept by lease events.
    promised = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    #: An instant at which pending leases hold ``promised`` (None: unknown),
    #: so that a lease leaving elsewhere keeps it without a recount.
    promised_at = sa.Column(types.DateTime, nullable=True)
    #: What active leases hold, part of ``used``.
    leased = sa.Column(sa.Integer, nullable=False, default=0,
                       server_default='0')


class Reservation(TimestampMixin, Base):
    """One resource's share of a reserve (or of a release)."""

    __tablename__ = 'reservations'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'request_id', 'resource',
                            name='uniq_reservations0project0request0res'),
        sa.Index('reservations_status_expire_idx', 'status', 'expire'),
        sa.Index('reservations_status_updated_idx', 'status', 'updated_at'),
        sa.Index('reservations_project_status_idx', 'project_id', 'status'),
        # The pages of GET /v1/reservations?project_id=, newest first.
        sa.Index('reservations_project_id_idx', 'project_id', 'id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(types.identifier(36), nullable=False, unique=True)
    usage_id = sa.Column(sa.Integer, sa.ForeignKey('quota_usages.id'),
                         nullable=False)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    delta = sa.Column(sa.Integer, nullable=False)
    expire = sa.Column(types.DateTime, nullable=True)
    status = sa.Column(sa.String(16), nullable=False, default=RESERVED)
    request_id = sa.Column(types.identifier(255), nullable=True)
    consumer_id = sa.Column(types.identifier(255), nullable=True)
    #: The reserve also claimed devices for the consumer, so ending the
    #: reservation without a commit gives them back.
    devices = sa.Column(sa.Boolean, nullable=False, default=False)


class ConsumerUsage(TimestampMixin, Base):
    """What one consumer (an instance, a lease) holds of a resource.

    Committed reservations add to it and releases take from it; '' stands
    for reservations that named no consumer.
    """

    __tablename__ = 'consumer_usages'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource', 'consumer_id',
                            name='uniq_consumer_usages0project0res0consumer'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    consumer_id = sa.Column(types.identifier(255), nullable=False, default='')
    used = sa.Column(sa.Integer, nullable=False, default=0)


class DriftEvent(Base):
    """A moment the books disagreed with a request, recorded, not hidden.

    For example a release of more than a project (or consumer) uses: the
    count stops at zero and the difference is kept here until a
    ``quota sync`` acknowledges it.
    """

    __tablename__ = 'drift_events'
    __table_args__ = (
        sa.Index('drift_events_resolved_idx', 'resolved_at'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    consumer_id = sa.Column(types.identifier(255), nullable=True)
    kind = sa.Column(sa.String(64), nullable=False)
    requested = sa.Column(sa.Integer, nullable=False)
    applied = sa.Column(sa.Integer, nullable=False)
    detail = sa.Column(sa.String(1024), nullable=True)
    created_at = sa.Column(types.DateTime, nullable=False, default=utcnow)
    resolved_at = sa.Column(types.DateTime, nullable=True)


class RegisteredLimit(TimestampMixin, Base):
    """The default limit of a resource for every project (embedded store)."""

    __tablename__ = 'registered_limits'

    resource = sa.Column(types.identifier(255), primary_key=True)
    default_limit = sa.Column(sa.Integer, nullable=False)


class ProjectLimit(TimestampMixin, Base):
    """A project's own limit of a resource (embedded store)."""

    __tablename__ = 'project_limits'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_project_limits0project_id0resource'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    resource_limit = sa.Column(sa.Integer, nullable=False)


class Project(TimestampMixin, Base):
    """A project of the embedded limit store and its place in a tree.

    Under strict-two-level a tree is a root (``parent_id`` null) and its
    children. A project's parent is fixed once the row exists, as in
    Keystone.
    """

    __tablename__ = 'projects'
    __table_args__ = (
        sa.Index('projects_parent_id_idx', 'parent_id'),
    )

    id = sa.Column(types.identifier(255), primary_key=True)
    parent_id = sa.Column(types.identifier(255), nullable=True)
    name = sa.Column(sa.String(255), nullable=True)


class TreeUsage(MeterMixin, TimestampMixin, Base):
    """What a whole tree (root and children) uses and holds reserved.

    The tree's aggregate usage (``doc/source/limits.rst``): kept in the same
    transaction as every change to a tree member's ``quota_usages`` row
    and locked before it, so the strict-two-level tree check reads one row
    however many children the root has. Its meter is the whole tree's, and
    a root's budget is kept on it (``cyquota.budgets``).
    """

    __tablename__ = 'tree_usages'
    __table_args__ = (
        sa.UniqueConstraint('root_id', 'resource',
                            name='uniq_tree_usages0root_id0resource'),
        sa.CheckConstraint('used >= 0', name='ck_tree_usages_used'),
        sa.CheckConstraint('reserved >= 0', name='ck_tree_usages_reserved'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    root_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    # A tree can hold more than one project's 32-bit count.
    used = sa.Column(sa.BigInteger, nullable=False, default=0)
    reserved = sa.Column(sa.BigInteger, nullable=False, default=0)
    #: As on ``quota_usages``, over every member's leases.
    promised = sa.Column(sa.BigInteger, nullable=False, default=0,
                         server_default='0')
    promised_at = sa.Column(types.DateTime, nullable=True)
    leased = sa.Column(sa.BigInteger, nullable=False, default=0,
                       server_default='0')
