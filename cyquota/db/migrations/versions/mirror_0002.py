"""What the cloud's Placement should hold for each lease written back to
it (``[placement] write_leases``), one row per lease (mirror branch).

Revision ID: mirror_0002
Revises: mirror_0001
Create Date: 2026-12-09
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'mirror_0002'
down_revision = 'mirror_0001'
branch_labels = None
depends_on = None

_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'placement_lease_writes',
        sa.Column('lease_id', sa.String(36), primary_key=True),
        sa.Column('held', sa.Boolean, nullable=False),
        sa.Column('version', sa.Integer, nullable=False),
        sa.Column('applied', sa.Boolean, nullable=False),
        sa.Column('applied_at', types.DateTime, nullable=True),
        sa.Column('attempted_at', types.DateTime, nullable=True),
        sa.Column('refusal', sa.String(1024), nullable=True),
        sa.Column('created_at', types.DateTime, nullable=False),
        sa.Column('updated_at', types.DateTime, nullable=True),
        **_TABLE_OPTIONS)
    op.create_index('placement_lease_writes_applied_idx',
                    'placement_lease_writes',
                    ['applied', 'held', 'applied_at'])
