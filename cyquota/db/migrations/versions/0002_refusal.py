"""PostgreSQL: the function by which a one-statement ledger operation
undoes what it wrote and leaves the decision to the locked path.

On an autocommit connection a statement is its own transaction; an error
raised by it is the only way to roll back what its first CTEs wrote when
a later one could not do its part. PostgreSQL has no built-in function
that raises. Other servers need none.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    # VOLATILE (the default): never evaluated ahead of the CASE that
    # calls it, even with a constant argument.
    op.execute(
        'CREATE OR REPLACE FUNCTION cyquota_refuse(message text)'
        ' RETURNS integer LANGUAGE plpgsql AS'
        ' $$ BEGIN RAISE EXCEPTION USING MESSAGE = message; END $$')
