"""Accelerator-hour budgets (SPEC 3.8): the meter on every usage row, the
budgets and their append-only entries. Joins the two heads before it.

Revision ID: budgets_0001
Revises: refusals_0001, witness_0001
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'budgets_0001'
down_revision = ('refusals_0001', 'witness_0001')
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('quota_usages') as batch:
        batch.add_column(sa.Column('metered', sa.BigInteger, nullable=False,
                                   server_default='0'))
        for name in ('metered_at', 'metered_mark', 'marked_period',
                     'budget_base'):
            batch.add_column(sa.Column(name, sa.BigInteger, nullable=True))
    op.create_table(
        'budgets',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', types.identifier(255), nullable=False),
        sa.Column('resource', types.identifier(255), nullable=False),
        sa.Column('seconds', sa.BigInteger, nullable=False),
        sa.Column('refill', sa.String(8), nullable=False),
        sa.Column('cap', sa.BigInteger, nullable=True),
        sa.Column('period_start', types.DateTime, nullable=False),
        sa.Column('closed_meter', sa.BigInteger, nullable=False),
        sa.Column('exhausted_period', types.DateTime, nullable=True),
        sa.Column('created_at', types.DateTime, nullable=False),
        sa.Column('updated_at', types.DateTime, nullable=True),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_budgets0project_id0resource'),
        sa.CheckConstraint('seconds >= 0', name='ck_budgets_seconds'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'budget_entries',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.Column('project_id', types.identifier(255), nullable=False),
        sa.Column('resource', types.identifier(255), nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('seconds', sa.BigInteger, nullable=False),
        sa.Column('period_start', types.DateTime, nullable=False),
        sa.Column('at', types.DateTime, nullable=False),
        sa.Column('actor', sa.String(255), nullable=True),
        sa.Column('reason', sa.String(255), nullable=True),
        sa.Column('lease_id', sa.String(36), nullable=True),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('budget_entries_project_idx', 'budget_entries',
                    ['project_id', 'id'])
