"""The mirror of the cloud's Placement: its state row and the providers
kept although Placement no longer has them (mirror branch).

Revision ID: mirror_0001
Revises: placement_0001
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'mirror_0001'
down_revision = 'placement_0001'
branch_labels = ('mirror',)
depends_on = None

_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'placement_mirror',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
        sa.Column('claimed_at', types.DateTime, nullable=True),
        sa.Column('claimed_by', sa.String(255), nullable=True),
        sa.Column('synced_at', types.DateTime, nullable=True),
        sa.Column('failed_at', types.DateTime, nullable=True),
        sa.Column('last_error', sa.String(1024), nullable=True),
        **_TABLE_OPTIONS)
    op.create_table(
        'mirror_kept_providers',
        sa.Column('resource_provider_id', sa.Integer,
                  sa.ForeignKey('resource_providers.id'), primary_key=True),
        sa.Column('reason', sa.String(255), nullable=False),
        sa.Column('kept_at', types.DateTime, nullable=False),
        **_TABLE_OPTIONS)
