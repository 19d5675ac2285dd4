"""The refusals log (refusals branch, after every other): reserves for a
consumer refused over quota, found by consumer or project, newest first,
and purged by age.

Revision ID: refusals_0001
Revises: leases_0005
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'refusals_0001'
down_revision = 'leases_0005'
branch_labels = ('refusals',)
depends_on = None


def upgrade():
    op.create_table(
        'refusals',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', types.identifier(36), nullable=False,
                  unique=True),
        sa.Column('project_id', types.identifier(255), nullable=False),
        sa.Column('consumer_id', types.identifier(255), nullable=False),
        sa.Column('request_id', types.identifier(255), nullable=True),
        sa.Column('user_id', types.identifier(255), nullable=True),
        sa.Column('overs', sa.Text, nullable=False),
        sa.Column('created_at', types.DateTime, nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('refusals_consumer_id_idx', 'refusals',
                    ['consumer_id', 'id'])
    op.create_index('refusals_project_id_idx', 'refusals',
                    ['project_id', 'id'])
    op.create_index('refusals_created_at_idx', 'refusals', ['created_at'])
