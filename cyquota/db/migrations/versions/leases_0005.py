"""How many leases a project holds (leases branch): a row per project that
each lease create locks, so that its leases are counted by one create at
a time, with the count of its live leases (PENDING, ACTIVE) kept at
create and end, filled here from the leases there are; and the index that
counts its ERROR leases until their end.

Revision ID: leases_0005
Revises: identifiers_0001
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'leases_0005'
down_revision = 'identifiers_0001'
branch_labels = None
depends_on = None


def upgrade():
    projects = op.create_table(
        'lease_projects',
        sa.Column('project_id', types.identifier(255), primary_key=True),
        sa.Column('live', sa.Integer, nullable=False, server_default='0'),
        sa.Column('created_at', types.DateTime, nullable=False),
        sa.Column('updated_at', types.DateTime, nullable=True),
        sa.CheckConstraint('live >= 0', name='ck_lease_projects_live'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('leases_project_status_end_idx', 'leases',
                    ['project_id', 'status', 'end_date'])
    leases = sa.table('leases', sa.column('project_id'),
                      sa.column('status'),
                      sa.column('created_at', types.DateTime))
    op.execute(projects.insert().from_select(
        ['project_id', 'live', 'created_at'],
        sa.select(leases.c.project_id, sa.func.count(),
                  sa.func.min(leases.c.created_at))
        .where(leases.c.status.in_(('PENDING', 'ACTIVE')))
        .group_by(leases.c.project_id)))
