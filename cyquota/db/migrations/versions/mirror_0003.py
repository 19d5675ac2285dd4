"""The generation of each provider Placement listed at the last sync of
the mirror, so that a sync reads again only what moved (mirror branch).

Revision ID: mirror_0003
Revises: mirror_0002
Create Date: 2026-12-16
"""

from alembic import op
import sqlalchemy as sa

revision = 'mirror_0003'
down_revision = 'mirror_0002'
branch_labels = None
depends_on = None

_TABLE_OPTIONS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'mirror_seen_providers',
        sa.Column('uuid', sa.String(36), primary_key=True),
        sa.Column('generation', sa.Integer, nullable=False),
        sa.Column('allocated', sa.Boolean, nullable=False),
        **_TABLE_OPTIONS)
    op.add_column('placement_mirror',
                  sa.Column('seen_classes', sa.Text, nullable=True))
