"""Calendar indexes that range over time (leases branch): a lease check
reads only the windows that overlap its own, the pending ones that start
before it ends, by level (project or tree root) or by resource class and
provider; each takes the place of the index it extends.

Revision ID: leases_0003
Revises: leases_0002
Create Date: 2026-11-26
"""

from alembic import op

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


def upgrade():
    for table, old, new, columns in _CHANGES:
        op.create_index(new, table, columns)
        op.drop_index(old, table_name=table)
    op.create_index('lease_allocations_rc_start_idx', 'lease_allocations',
                    ['resource_class', 'status', 'start_date'])
