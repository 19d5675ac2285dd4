"""How many leases a project holds (leases branch): a row per project that
each lease create locks, so that the count of its leases is checked by one
create at a time, and the index that counts them (its live leases, and its
ERROR ones until their end).

Revision ID: leases_0005
Revises: leases_0004
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'leases_0005'
down_revision = 'leases_0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'lease_projects',
        sa.Column('project_id', sa.String(255), primary_key=True),
        sa.Column('created_at', types.DateTime, nullable=False),
        sa.Column('updated_at', types.DateTime, nullable=True),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('leases_project_status_end_idx', 'leases',
                    ['project_id', 'status', 'end_date'])
