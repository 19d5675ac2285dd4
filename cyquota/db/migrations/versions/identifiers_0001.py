"""Identifiers compared byte for byte on MySQL and MariaDB (identifiers
branch, after every other), in tables of the 4-byte utf8mb4 character set.

MariaDB's default collation ignores case: ``CaseA`` and ``casea`` were one
project and the request ids ``R1`` and ``r1`` one retried reserve, where
PostgreSQL and SQLite keep them apart. Every identifier column (ids,
uuids, resource classes, hosts: ``types.identifier``) takes the binary
collation; a table created in another character set than utf8mb4 is
converted first. Nothing to do on PostgreSQL and SQLite. No row can
collide: the old collation's unique keys already kept apart every pair
the new one tells apart.

Revision ID: identifiers_0001
Revises: 0003, conductor_0001, leases_0004, mirror_0003
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'identifiers_0001'
# After the head of every branch: the tables as they made them.
down_revision = ('0003', 'conductor_0001', 'leases_0004', 'mirror_0003')
branch_labels = ('identifiers',)
depends_on = None

#: ``{table: [(column, length, nullable)]}``: the identifier columns.
_IDENTIFIERS = {
    'quota_usages': [('project_id', 255, False), ('resource', 255, False)],
    'reservations': [
        ('uuid', 36, False), ('project_id', 255, False),
        ('resource', 255, False), ('request_id', 255, True),
        ('consumer_id', 255, True)],
    'consumer_usages': [
        ('project_id', 255, False), ('resource', 255, False),
        ('consumer_id', 255, False)],
    'drift_events': [
        ('project_id', 255, False), ('resource', 255, False),
        ('consumer_id', 255, True)],
    'registered_limits': [('resource', 255, False)],
    'project_limits': [('project_id', 255, False), ('resource', 255, False)],
    'projects': [('id', 255, False), ('parent_id', 255, True)],
    'tree_usages': [('root_id', 255, False), ('resource', 255, False)],
    'host_reports': [('host', 255, False)],
    'host_allocations': [
        ('host', 255, False), ('project_id', 255, False),
        ('resource', 255, False), ('consumer_id', 255, False)],
    'resource_providers': [('uuid', 36, False)],
    'provider_inventories': [('resource_class', 255, False)],
    'placement_aggregates': [('uuid', 36, False)],
    'aggregate_metadata': [('key', 255, False)],
    'provider_traits': [('trait', 255, False)],
    'device_consumers': [
        ('consumer_id', 255, False), ('project_id', 255, False),
        ('user_id', 255, True)],
    'device_allocations': [
        ('consumer_id', 255, False), ('resource_class', 255, False)],
    'leases': [
        ('id', 36, False), ('project_id', 255, False),
        ('user_id', 255, True)],
    'lease_reservations': [
        ('id', 36, False), ('lease_id', 36, False),
        ('project_id', 255, False), ('root_id', 255, False),
        ('resource', 255, False), ('member_key', 255, True)],
    'lease_allocations': [
        ('lease_id', 36, False), ('lease_reservation_id', 36, False),
        ('resource_class', 255, False)],
    'placement_mirror': [('claimed_by', 255, True)],
    'mirror_seen_providers': [('uuid', 36, False)],
    'placement_lease_writes': [('lease_id', 36, False)],
}


#: The foreign keys between identifier columns: (table, column, parent
#: table, parent column). MariaDB changes neither side's collation while
#: one holds them together, even without foreign_key_checks.
_FOREIGN_KEYS = (('host_allocations', 'host', 'host_reports', 'host'),
                 ('lease_reservations', 'lease_id', 'leases', 'id'))


def _modify(column, length, nullable):
    return 'MODIFY `%s` VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE %s %s' % (
        column, length, types.BINARY_COLLATION,
        'NULL' if nullable else 'NOT NULL')


def _foreign_key_names(bind):
    """``{(table, column): constraint name}`` of ``_FOREIGN_KEYS``."""
    rows = bind.execute(sa.text(
        "SELECT table_name, column_name, constraint_name "
        "FROM information_schema.key_column_usage "
        "WHERE table_schema = DATABASE() "
        "AND referenced_table_name IS NOT NULL")).all()
    names = {(table, column): name for table, column, name in rows}
    return {(table, column): names[table, column]
            for table, column, _parent, _key in _FOREIGN_KEYS}


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name not in ('mysql', 'mariadb'):
        return
    names = _foreign_key_names(bind)
    for (table, _column), name in names.items():
        op.execute('ALTER TABLE `%s` DROP FOREIGN KEY `%s`' % (table, name))
    others = bind.execute(sa.text(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' "
        "AND table_collation NOT LIKE 'utf8mb4%'")).scalars().all()
    for table in sorted(others):
        op.execute('ALTER TABLE `%s` CONVERT TO CHARACTER SET utf8mb4' % table)
    for table, columns in _IDENTIFIERS.items():
        # One ALTER a table: InnoDB copies a table once for all of them.
        op.execute('ALTER TABLE `%s` %s' % (table, ', '.join(
            _modify(*column) for column in columns)))
    for table, column, parent, key in _FOREIGN_KEYS:
        op.execute('ALTER TABLE `%s` ADD CONSTRAINT `%s` FOREIGN KEY (`%s`) '
                   'REFERENCES `%s` (`%s`)' % (
                       table, names[table, column], column, parent, key))
