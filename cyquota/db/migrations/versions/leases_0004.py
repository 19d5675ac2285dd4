"""Calendar indexes that hold what the calendar reads (leases branch): a
lease check's overlapping windows (each one's dates, amount and lease,
and for a provider's its resource class) are read from the index alone,
never from the table's rows. Where the calendar outgrows the database's
memory (MariaDB's buffer pool), a row looked up in the table is a page
read at a random place; the index's pages of one range are few and
together. Each index takes the place of the one it extends.

Revision ID: leases_0004
Revises: leases_0003
Create Date: 2026-11-27
"""

from alembic import op

revision = 'leases_0004'
down_revision = 'leases_0003'
branch_labels = None
depends_on = None

_WINDOW = ['status', 'start_date', 'end_date', 'amount', 'lease_id']

#: (table, old index, new index, new columns): each new one first, as
#: MariaDB keeps a foreign key's index until another serves it.
_CHANGES = (
    ('lease_reservations', 'lease_reservations_project_start_idx',
     'lease_reservations_project_window_idx',
     ['project_id', 'resource'] + _WINDOW),
    ('lease_reservations', 'lease_reservations_root_start_idx',
     'lease_reservations_root_window_idx', ['root_id', 'resource'] + _WINDOW),
    ('lease_allocations', 'lease_allocations_rp_start_idx',
     'lease_allocations_rp_window_idx',
     ['resource_provider_id', 'resource_class'] + _WINDOW),
)


def upgrade():
    for table, old, new, columns in _CHANGES:
        op.create_index(new, table, columns)
        op.drop_index(old, table_name=table)
