"""Indexes that serve the lease listing's order, newest first, so that a
page costs the same however many leases there are (leases branch): every
lease's, one project's, and one project's in one status (which takes the
place of the (project_id, status) index, its prefix).

Revision ID: leases_0002
Revises: leases_0001
Create Date: 2026-11-26
"""

from alembic import op

revision = 'leases_0002'
down_revision = 'leases_0001'
branch_labels = None
depends_on = None


def upgrade():
    # Ascending: each server reads them backwards for (created_at DESC,
    # id DESC).
    op.create_index('leases_created_idx', 'leases', ['created_at', 'id'])
    op.create_index('leases_project_created_idx', 'leases',
                    ['project_id', 'created_at', 'id'])
    op.drop_index('leases_project_status_idx', table_name='leases')
    op.create_index('leases_project_status_idx', 'leases',
                    ['project_id', 'status', 'created_at', 'id'])
