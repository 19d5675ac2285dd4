"""Devices: resource providers, inventories, aggregates, allocations.

Revision ID: placement_0001
Revises: 0001
Create Date: 2026-11-21
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'placement_0001'
down_revision = '0001'
branch_labels = ('placement',)
depends_on = None

_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _timestamps():
    return [sa.Column('created_at', types.DateTime, nullable=False),
            sa.Column('updated_at', types.DateTime, nullable=True)]


def _provider_fk(**kwargs):
    return sa.Column('resource_provider_id', sa.Integer,
                     sa.ForeignKey('resource_providers.id'), nullable=False,
                     **kwargs)


def upgrade():
    op.create_table(
        'resource_providers',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(200), nullable=False),
        sa.Column('generation', sa.Integer, nullable=False),
        sa.Column('root_provider_id', sa.Integer, nullable=True),
        sa.Column('parent_provider_id', sa.Integer, nullable=True),
        *_timestamps(),
        sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'),
        sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
        **_TABLE_OPTIONS)
    op.create_index('resource_providers_root_provider_id_idx',
                    'resource_providers', ['root_provider_id'])
    op.create_index('resource_providers_parent_provider_id_idx',
                    'resource_providers', ['parent_provider_id'])
    op.create_table(
        'provider_inventories',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        _provider_fk(),
        sa.Column('resource_class', sa.String(255), nullable=False),
        sa.Column('total', sa.Integer, nullable=False),
        sa.Column('reserved', sa.Integer, nullable=False),
        sa.Column('min_unit', sa.Integer, nullable=False),
        sa.Column('max_unit', sa.Integer, nullable=False),
        sa.Column('step_size', sa.Integer, nullable=False),
        sa.Column('allocation_ratio', sa.Float, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('resource_provider_id', 'resource_class',
                            name='uniq_provider_inventories0rp0rc'),
        **_TABLE_OPTIONS)
    op.create_table(
        'placement_aggregates',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'),
        **_TABLE_OPTIONS)
    op.create_table(
        'aggregate_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('aggregate_id', sa.Integer,
                  sa.ForeignKey('placement_aggregates.id'), nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate0key'),
        **_TABLE_OPTIONS)
    op.create_index('aggregate_metadata_key_idx', 'aggregate_metadata',
                    ['key'])
    op.create_table(
        'provider_aggregates',
        _provider_fk(primary_key=True),
        sa.Column('aggregate_id', sa.Integer,
                  sa.ForeignKey('placement_aggregates.id'), nullable=False,
                  primary_key=True),
        **_TABLE_OPTIONS)
    op.create_index('provider_aggregates_aggregate_id_idx',
                    'provider_aggregates', ['aggregate_id'])
    op.create_table(
        'provider_traits',
        _provider_fk(primary_key=True),
        sa.Column('trait', sa.String(255), nullable=False, primary_key=True),
        **_TABLE_OPTIONS)
    op.create_table(
        'device_consumers',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('consumer_id', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint('consumer_id',
                            name='uniq_device_consumers0consumer_id'),
        **_TABLE_OPTIONS)
    op.create_table(
        'device_allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        _provider_fk(),
        sa.Column('consumer_id', sa.String(255), nullable=False),
        sa.Column('resource_class', sa.String(255), nullable=False),
        sa.Column('used', sa.Integer, nullable=False),
        *_timestamps(),
        **_TABLE_OPTIONS)
    op.create_index('device_allocations_rp_rc_idx', 'device_allocations',
                    ['resource_provider_id', 'resource_class'])
    op.create_index('device_allocations_consumer_idx', 'device_allocations',
                    ['consumer_id'])
