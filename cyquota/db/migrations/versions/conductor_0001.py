"""Attachment reports of the agents (conductor branch).

Revision ID: conductor_0001
Revises: 0001
Create Date: 2026-11-21
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'conductor_0001'
down_revision = '0001'
branch_labels = ('conductor',)
depends_on = None


def upgrade():
    op.create_table(
        'host_reports',
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('reported_at', types.DateTime, nullable=False),
        sa.Column('created_at', types.DateTime, nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'host_allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('host', sa.String(255), sa.ForeignKey('host_reports.host'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('consumer_id', sa.String(255), nullable=False),
        sa.Column('amount', sa.Integer, nullable=False),
        sa.UniqueConstraint('host', 'consumer_id', 'resource',
                            name='uniq_host_allocations0host0consumer0res'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('host_allocations_project_resource_idx',
                    'host_allocations', ['project_id', 'resource'])
