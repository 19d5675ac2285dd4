"""The quota ledger and the embedded limit store.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', types.DateTime, nullable=False),
            sa.Column('updated_at', types.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        'quota_usages',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('used', sa.Integer, nullable=False),
        sa.Column('reserved', sa.Integer, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_usages0project_id0resource'),
        sa.CheckConstraint('used >= 0', name='ck_quota_usages_used'),
        sa.CheckConstraint('reserved >= 0', name='ck_quota_usages_reserved'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'reservations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('usage_id', sa.Integer, sa.ForeignKey('quota_usages.id'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('delta', sa.Integer, nullable=False),
        sa.Column('expire', types.DateTime, nullable=True),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('request_id', sa.String(255), nullable=True),
        sa.Column('consumer_id', sa.String(255), nullable=True),
        sa.Column('devices', sa.Boolean, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('project_id', 'request_id', 'resource',
                            name='uniq_reservations0project0request0res'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('reservations_status_expire_idx', 'reservations',
                    ['status', 'expire'])
    op.create_index('reservations_status_updated_idx', 'reservations',
                    ['status', 'updated_at'])
    op.create_index('reservations_project_status_idx', 'reservations',
                    ['project_id', 'status'])
    op.create_table(
        'consumer_usages',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('consumer_id', sa.String(255), nullable=False),
        sa.Column('used', sa.Integer, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('project_id', 'resource', 'consumer_id',
                            name='uniq_consumer_usages0project0res0consumer'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'drift_events',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('consumer_id', sa.String(255), nullable=True),
        sa.Column('kind', sa.String(64), nullable=False),
        sa.Column('requested', sa.Integer, nullable=False),
        sa.Column('applied', sa.Integer, nullable=False),
        sa.Column('detail', sa.String(1024), nullable=True),
        sa.Column('created_at', types.DateTime, nullable=False),
        sa.Column('resolved_at', types.DateTime, nullable=True),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('drift_events_resolved_idx', 'drift_events',
                    ['resolved_at'])
    op.create_table(
        'registered_limits',
        sa.Column('resource', sa.String(255), primary_key=True),
        sa.Column('default_limit', sa.Integer, nullable=False),
        *_timestamps(),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'project_limits',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('resource_limit', sa.Integer, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_project_limits0project_id0resource'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
