"""Calendar indexes that range over time (leases branch): a lease check
reads only the windows that overlap its own, the pending ones that start
before it ends and after it starts less the longest pending window, by
level (project or tree root) or by provider; each takes
the place of the index it extends. Each calendar row gets its window's
length (``span``, seconds), indexed by status for the longest; each usage
row the instant its ``promised`` peak is held (``promised_at``).

Revision ID: leases_0003
Revises: leases_0002
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'leases_0003'
down_revision = 'leases_0002'
branch_labels = None
depends_on = None

#: (table, old index, new index, new columns): each new one first, as
#: MariaDB keeps a foreign key's index until another serves it.
_CHANGES = (
    ('lease_reservations', 'lease_reservations_project_idx',
     'lease_reservations_project_start_idx',
     ['project_id', 'resource', 'status', 'start_date']),
    ('lease_reservations', 'lease_reservations_root_idx',
     'lease_reservations_root_start_idx',
     ['root_id', 'resource', 'status', 'start_date']),
    ('lease_allocations', 'lease_allocations_rp_status_idx',
     'lease_allocations_rp_start_idx',
     ['resource_provider_id', 'status', 'start_date']),
)


def _add_span(name):
    op.add_column(name, sa.Column('span', sa.BigInteger, nullable=False,
                                  server_default='0'))
    table = sa.table(name, sa.column('id'),
                     sa.column('start_date', types.DateTime),
                     sa.column('end_date', types.DateTime),
                     sa.column('span', sa.BigInteger))
    conn = op.get_bind()
    rows = conn.execute(sa.select(table.c.id, table.c.start_date,
                                  table.c.end_date)).all()
    if rows:
        conn.execute(
            table.update().where(table.c.id == sa.bindparam('row_id'))
            .values(span=sa.bindparam('length')),
            [{'row_id': row.id,
              'length': types.seconds(row.start_date, row.end_date)}
             for row in rows])
    op.create_index(name + '_status_span_idx', name, ['status', 'span'])


def upgrade():
    # Unknown until a lease event recounts the peak.
    for table in ('quota_usages', 'tree_usages'):
        op.add_column(table, sa.Column('promised_at', types.DateTime,
                                       nullable=True))
    _add_span('lease_reservations')
    _add_span('lease_allocations')
    for table, old, new, columns in _CHANGES:
        op.create_index(new, table, columns)
        op.drop_index(old, table_name=table)
