"""What the periodic witness found differing between the ledger and the
cloud's Placement, per resource and figure (``[placement]
witness_interval``); its rounds are a row of ``placement_mirror``.

Revision ID: witness_0001
Revises: leases_0005
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'witness_0001'
down_revision = 'leases_0005'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'placement_witness_drift',
        sa.Column('resource', types.identifier(255), primary_key=True),
        sa.Column('field', sa.String(16), primary_key=True),
        sa.Column('projects', sa.Integer, nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
