"""Leases, their device allocations, and the promised and leased counts
(leases branch).

Revision ID: leases_0001
Revises: hierarchy_0001, placement_0001
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'leases_0001'
# Leases stand on both the tree usages and the device providers.
down_revision = ('hierarchy_0001', 'placement_0001')
branch_labels = ('leases',)
depends_on = None


def _timestamps():
    return [sa.Column('created_at', types.DateTime, nullable=False),
            sa.Column('updated_at', types.DateTime, nullable=True)]


def upgrade():
    for table, kind in (('quota_usages', sa.Integer),
                        ('tree_usages', sa.BigInteger)):
        for column in ('promised', 'leased'):
            op.add_column(table, sa.Column(column, kind, nullable=False,
                                           server_default='0'))
    op.create_table(
        'leases',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('start_date', types.DateTime, nullable=False),
        sa.Column('end_date', types.DateTime, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('status_reason', sa.String(1024), nullable=True),
        *_timestamps(),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('leases_project_status_idx', 'leases',
                    ['project_id', 'status'])
    op.create_index('leases_status_start_idx', 'leases',
                    ['status', 'start_date'])
    op.create_index('leases_status_end_idx', 'leases',
                    ['status', 'end_date'])
    op.create_table(
        'lease_reservations',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('lease_id', sa.String(36), sa.ForeignKey('leases.id'),
                  nullable=False),
        sa.Column('position', sa.Integer, nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('root_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('amount', sa.Integer, nullable=False),
        sa.Column('member_of', sa.Text, nullable=False),
        sa.Column('member_key', sa.String(255), nullable=True),
        sa.Column('start_date', types.DateTime, nullable=False),
        sa.Column('end_date', types.DateTime, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        *_timestamps(),
        sa.CheckConstraint('amount > 0',
                           name='ck_lease_reservations_amount'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('lease_reservations_lease_idx', 'lease_reservations',
                    ['lease_id'])
    op.create_index('lease_reservations_project_idx', 'lease_reservations',
                    ['project_id', 'resource', 'status'])
    op.create_index('lease_reservations_root_idx', 'lease_reservations',
                    ['root_id', 'resource', 'status'])
    op.create_table(
        'lease_allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('lease_id', sa.String(36), nullable=False),
        sa.Column('lease_reservation_id', sa.String(36), nullable=False),
        sa.Column('resource_provider_id', sa.Integer,
                  sa.ForeignKey('resource_providers.id'), nullable=False),
        sa.Column('resource_class', sa.String(255), nullable=False),
        sa.Column('amount', sa.Integer, nullable=False),
        sa.Column('start_date', types.DateTime, nullable=False),
        sa.Column('end_date', types.DateTime, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        *_timestamps(),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('lease_allocations_rp_status_idx', 'lease_allocations',
                    ['resource_provider_id', 'status'])
    op.create_index('lease_allocations_lease_idx', 'lease_allocations',
                    ['lease_id'])
