"""SQLAlchemy models of the device side: Placement-style resource providers.

Accelerator devices are resource providers in trees (a compute node is the
root, its devices are children), with inventories per resource class,
aggregate membership, traits, and allocations of consumers. Every change to
a provider's inventories, aggregates, traits or allocations increments its
``generation`` while the provider row is locked, as Placement does.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types


class ResourceProvider(models.TimestampMixin, models.Base):
    """A compute node, an accelerator device, or a sharing provider."""

    __tablename__ = 'resource_providers'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'),
        sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
        sa.Index('resource_providers_root_provider_id_idx',
                 'root_provider_id'),
        sa.Index('resource_providers_parent_provider_id_idx',
                 'parent_provider_id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(types.identifier(36), nullable=False)
    name = sa.Column(sa.String(200), nullable=False)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    # The tree columns carry no foreign keys: MySQL checks self-references
    # row by row, which would refuse deleting a whole tree in one statement.
    # Providers are created and deleted with their parent row locked, and
    # a parent with children is never deleted. root_provider_id is null only
    # between a root's insert and the update that points it at itself.
    root_provider_id = sa.Column(sa.Integer, nullable=True)
    parent_provider_id = sa.Column(sa.Integer, nullable=True)


class Inventory(models.TimestampMixin, models.Base):
    """How much of one resource class a provider offers."""

    __tablename__ = 'provider_inventories'
    __table_args__ = (
        sa.UniqueConstraint('resource_provider_id', 'resource_class',
                            name='uniq_provider_inventories0rp0rc'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), nullable=False)
    resource_class = sa.Column(types.identifier(255), nullable=False)
    total = sa.Column(sa.Integer, nullable=False)
    reserved = sa.Column(sa.Integer, nullable=False)
    min_unit = sa.Column(sa.Integer, nullable=False)
    max_unit = sa.Column(sa.Integer, nullable=False)
    step_size = sa.Column(sa.Integer, nullable=False)
    allocation_ratio = sa.Column(sa.Float, nullable=False)


class Aggregate(models.TimestampMixin, models.Base):
    """A set of providers, named by uuid; created on first mention."""

    __tablename__ = 'placement_aggregates'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(types.identifier(36), nullable=False)
    name = sa.Column(sa.String(255), nullable=True)


class AggregateMetadata(models.Base):
    """One metadata key of an aggregate (lease pools are marked by keys)."""

    __tablename__ = 'aggregate_metadata'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate0key'),
        sa.Index('aggregate_metadata_key_idx', 'key'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    aggregate_id = sa.Column(
        sa.Integer, sa.ForeignKey('placement_aggregates.id'), nullable=False)
    key = sa.Column(types.identifier(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class ProviderAggregate(models.Base):
    """Direct membership of a provider in an aggregate."""

    __tablename__ = 'provider_aggregates'
    __table_args__ = (
        sa.Index('provider_aggregates_aggregate_id_idx', 'aggregate_id'),
    )

    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    aggregate_id = sa.Column(
        sa.Integer, sa.ForeignKey('placement_aggregates.id'),
        primary_key=True)


class ProviderTrait(models.Base):
    """A trait of a provider (MISC_SHARES_VIA_AGGREGATE marks sharing)."""

    __tablename__ = 'provider_traits'

    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    trait = sa.Column(types.identifier(255), primary_key=True)


class DeviceConsumer(models.TimestampMixin, models.Base):
    """Who holds device allocations: one row while it holds any."""

    __tablename__ = 'device_consumers'
    __table_args__ = (
        sa.UniqueConstraint('consumer_id',
                            name='uniq_device_consumers0consumer_id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    consumer_id = sa.Column(types.identifier(255), nullable=False)
    project_id = sa.Column(types.identifier(255), nullable=False)
    user_id = sa.Column(types.identifier(255), nullable=True)


class DeviceAllocation(models.TimestampMixin, models.Base):
    """An amount of a resource class a consumer holds on a provider."""

    __tablename__ = 'device_allocations'
    __table_args__ = (
        sa.Index('device_allocations_rp_rc_idx',
                 'resource_provider_id', 'resource_class'),
        sa.Index('device_allocations_consumer_idx', 'consumer_id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), nullable=False)
    consumer_id = sa.Column(types.identifier(255), nullable=False)
    resource_class = sa.Column(types.identifier(255), nullable=False)
    used = sa.Column(sa.Integer, nullable=False)


class LeaseAllocation(models.TimestampMixin, models.Base):
    """An amount of a resource class promised on a provider to a lease for
    ``[start_date, end_date)``; ``status`` follows the lease's. An active
    lease also holds ``device_allocations`` rows (consumer: the lease)."""

    __tablename__ = 'lease_allocations'
    __table_args__ = (
        # The calendar's reads: live windows of given providers that start
        # before a new one ends, the index holding all that the read
        # returns.
        sa.Index('lease_allocations_rp_window_idx', 'resource_provider_id',
                 'resource_class', 'status', 'start_date', 'end_date',
                 'amount', 'lease_id'),
        # The longest pending window (cyquota.lease_tables.overlaps).
        sa.Index('lease_allocations_status_span_idx', 'status', 'span'),
        sa.Index('lease_allocations_lease_idx', 'lease_id'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    lease_id = sa.Column(types.identifier(36), nullable=False)
    lease_reservation_id = sa.Column(types.identifier(36), nullable=False)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), nullable=False)
    resource_class = sa.Column(types.identifier(255), nullable=False)
    amount = sa.Column(sa.Integer, nullable=False)
    start_date = sa.Column(types.DateTime, nullable=False)
    end_date = sa.Column(types.DateTime, nullable=False)
    status = sa.Column(sa.String(16), nullable=False)
    #: Seconds from start_date to end_date.
    span = types.span_column()
