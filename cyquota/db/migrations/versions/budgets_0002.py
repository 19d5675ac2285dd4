"""Tree budgets (SPEC 3.8, strict-two-level): the meter on every tree
usage row, and the scope of each budget (its project, or its tree).

Revision ID: budgets_0002
Revises: budgets_0001
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa

revision = 'budgets_0002'
down_revision = 'budgets_0001'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('tree_usages') as batch:
        batch.add_column(sa.Column('metered', sa.BigInteger, nullable=False,
                                   server_default='0'))
        for name in ('metered_at', 'metered_mark', 'marked_period',
                     'budget_base'):
            batch.add_column(sa.Column(name, sa.BigInteger, nullable=True))
    with op.batch_alter_table('budgets') as batch:
        batch.add_column(sa.Column('scope', sa.String(8), nullable=False,
                                   server_default='project'))
