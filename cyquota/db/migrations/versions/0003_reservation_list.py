"""An index that serves a project's reservation listing, newest first
(id descending); the primary key serves every project's.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('reservations_project_id_idx', 'reservations',
                    ['project_id', 'id'])
