"""The common reserve, commit and rollback as one statement each, so that
an operation costs one round trip and COMMIT: on PostgreSQL, data-modifying
CTEs chain the conditional UPDATEs and INSERTs of ``statements``; on
MariaDB, a compound statement (``BEGIN NOT ATOMIC ... END``) runs them one
after the other.

Each statement only does what the multi-statement form does when every
condition holds, and returns what it did; the caller leaves the rest to
the locked path. CTEs that do not depend on one another run in no set
order, so each step that must follow another reads that one's rows: the
ledger's lock order holds inside a statement too.
"""

import collections
import functools
import itertools

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql import visitors

from cyquota.db import models
from cyquota.db import prepared
from cyquota.quota.ledger import statements as sql

#: The binds of a reserve that differ by resource; the ``i``-th resource's
#: are suffixed ``_i``.
PER_RESOURCE = ('_resource', '_delta', '_limit', '_uuid')


def bind_name(name, index):
    """The name of the per-resource bind ``name`` of resource ``index``."""
    return '%s_%d' % (name, index)


def _per_resource(statement, index):
    """``statement`` with its per-resource binds renamed for ``index``."""
    def rename(element):
        if (isinstance(element, sa.BindParameter)
                and element.key in PER_RESOURCE):
            return sa.bindparam(bind_name(element.key, index),
                                type_=element.type)
        return None
    return visitors.replacement_traverse(statement, {}, rename)


def reserve(dialect, limit, count, request_id):
    """The one-statement reserve of ``count`` resources for ``dialect``
    (``reserve_ctes`` prepared, or ``reserve_block``), or None where there
    is none. Its one row's one value is 1 if it reserved all, else 0 (and
    the transaction must roll back)."""
    if dialect.name == 'postgresql':
        return prepared.Prepared(reserve_ctes(limit, count, request_id),
                                 dialect)
    if is_mariadb(dialect):
        return reserve_block(dialect, limit, count, request_id)
    return None


def is_mariadb(dialect):
    """Whether ``dialect`` is MariaDB's through PyMySQL, which runs
    compound statements and reads what ends one before its next command
    (``run_block``)."""
    return (dialect.name == 'mysql' and dialect.is_mariadb
            and dialect.driver == 'pymysql')


class Block:
    """A MariaDB compound statement (``BEGIN NOT ATOMIC ... END``) that
    ends with one SELECT.

    :param text: its SQL, its binds in the driver's form (``%(name)s``).
    :param literals: the values of binds that are not the caller's.
    """

    def __init__(self, text, literals=None):
        self.text = text
        self._literals = literals or {}

    def rows(self, conn, params):
        """Run the block on ``conn`` with ``params``; returns the rows of
        its SELECT (named tuples).

        The server says how the block ended only after those rows. When
        the block was aborted after its SELECT (on Galera, by another
        node's write that won certification), that word is the error, and
        the server has rolled the transaction back. SQLAlchemy reads it
        only while closing the cursor, where it logs and drops errors: the
        COMMIT that followed would then succeed with nothing in it, and a
        commit or a reserve be reported done that never was. So the rows
        are read from the driver's cursor, which is left open: PyMySQL
        reads the rest before it sends its next command, and that command
        (the COMMIT) fails with the block's error, translated and retried
        as any deadlock.
        """
        result = conn.exec_driver_sql(self.text,
                                      dict(self._literals, **params))
        row = _row_type(tuple(result.keys()))
        return [row(*values) for values in result.cursor.fetchall()]


@functools.lru_cache(maxsize=None)
def _row_type(names):
    return collections.namedtuple('BlockRow', names)


def reserve_ctes(limit, count, request_id):
    """A reserve of ``count`` resources as one SELECT of its CTEs: for
    each resource in turn, the conditional UPDATE of ``reserve_if_fits``
    and the INSERT of its reservation. It returns 1 only if every
    resource fit (each UPDATE needs the previous INSERT's row, which also
    keeps the usage rows locked in the caller's order) and, with
    ``request_id``, no reserve used it before; else 0."""
    held = None
    for index in range(count):
        counted = sql.reserve_if_fits(limit)
        if request_id:
            counted = counted.where(~sa.exists().where(
                sql.RESERVATIONS.c.project_id == sa.bindparam('_project_id'),
                sql.RESERVATIONS.c.request_id == sa.bindparam('_request_id')))
        if held is not None:
            counted = counted.where(sa.exists(sa.select(held.c.uuid)))
        counted = _per_resource(
            counted.returning(sql.USAGES.c.id, sql.USAGES.c.project_id,
                              sql.USAGES.c.resource), index
        ).cte('counted_%d' % index)
        held = _per_resource(
            sql.reservation_of_usage(counted)
            .returning(sql.RESERVATIONS.c.uuid), index
        ).cte('held_%d' % index)
    return sa.select(sa.func.count()).select_from(held)


def reserve_block(dialect, limit, count, request_id):
    """MariaDB's reserve of ``count`` resources as one compound statement:
    the conditional UPDATE of each resource in turn while every one
    changed its row, then (and with ``request_id``, only if no reserve
    used it before) the INSERTs; it returns ``fits``: 1 if all were
    written, else 0. Returns a ``Block``."""
    params = {}
    numbers = itertools.count()

    def compiled(statement, index=0):
        text, literals = _compiled(_per_resource(statement, index), dialect,
                                   numbers)
        params.update(literals)
        return text

    updates = [compiled(sql.reserve_if_fits(limit), index)
               for index in range(count)]
    inserts = [compiled(sql.INSERT_RESERVATION_OF_USAGE, index)
               for index in range(count)]
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % compiled(sql.REQUEST_SEEN)
    lines = ['BEGIN NOT ATOMIC', 'DECLARE fits INT DEFAULT 1;']
    for update in updates:
        lines += ['IF fits THEN', update + ';',
                  'SET fits = ROW_COUNT() = 1;', 'END IF;']
    lines += ['IF fits%s THEN' % seen, *[i + ';' for i in inserts],
              'ELSE', 'SET fits = 0;', 'END IF;', 'SELECT fits;', 'END']
    return Block('\n'.join(lines), params)


def _compiled(statement, dialect, numbers):
    """``statement``'s SQL for ``dialect`` and the values of its literals,
    named ``_literal<n>`` with numbers from ``numbers`` so that the
    statements of one block do not share their names."""
    literals = {}

    def rename(element):
        if isinstance(element, sa.BindParameter) and element.unique:
            name = '_literal%d' % next(numbers)
            literals[name] = element.value
            return sa.bindparam(name, element.value, type_=element.type)
        return None
    compiled = visitors.replacement_traverse(statement, {}, rename).compile(
        dialect=dialect)
    return str(compiled), literals


def end_block(target, count):
    """MariaDB's end (``target``) of ``count`` reservations as one
    compound statement, for the common case: every one still reserved,
    not due, of the project, and all of one resource (and, for a commit,
    one consumer). It ends them (locked by uuid, as
    ``LOCK_RESERVATIONS``), moves the counts as ``END_RESERVED`` and (a
    commit) what the consumer holds as ``consumers.add``, each only where
    nothing goes below zero; it returns the ended rows, none if it did
    not end them all (and the transaction must roll back). A ``Block``,
    bound by the driver: ``_uuid_<i>``, ``_project_id``, ``_due_before``,
    ``_now``, ``_status``."""
    commit = target == models.COMMITTED
    lines = [
        'BEGIN NOT ATOMIC',
        'DECLARE v_resources, v_holders, v_done INT DEFAULT 0;',
        'DECLARE v_resource, v_holder VARCHAR(255);',
        'DECLARE v_held, v_taken BIGINT DEFAULT 0;',
        # Locked by the uuid index alone, as LOCK_RESERVATIONS: through
        # another index (project and status, say) it would lock entries
        # that an expiry holding the rows changes, and the two deadlock.
        # ``uuid`` is the name MariaDB gives the column's unique index.
        'UPDATE reservations FORCE INDEX (uuid)'
        ' SET status = %(_status)s, updated_at = %(_now)s'
        " WHERE uuid IN ({uuids}) AND project_id = %(_project_id)s"
        " AND status = 'reserved' AND expire >= %(_due_before)s;",
        'IF ROW_COUNT() = {count} THEN',
        "SELECT COUNT(DISTINCT resource), COUNT(DISTINCT COALESCE("
        "consumer_id, '')), MIN(resource), MIN(COALESCE(consumer_id, '')),"
        ' SUM(GREATEST(delta, 0)), SUM(LEAST(delta, 0))'
        ' INTO v_resources, v_holders, v_resource, v_holder, v_held, v_taken'
        ' FROM reservations WHERE uuid IN ({uuids});',
        'END IF;',
        'IF v_resources = 1' + (' AND v_holders = 1' if commit else '')
        + ' THEN',
        'UPDATE quota_usages SET reserved = reserved - v_held,'
        + (' used = used + v_held + v_taken,' if commit else '')
        + ' updated_at = %(_now)s WHERE project_id = %(_project_id)s'
        ' AND resource = v_resource AND reserved >= v_held'
        + (' AND used + v_taken >= 0' if commit else '') + ';',
        'SET v_done = ROW_COUNT() = 1;',
    ]
    if commit:
        lines += [
            'IF v_done AND v_taken = 0 THEN',
            'INSERT INTO consumer_usages (project_id, resource, consumer_id,'
            ' used, created_at) VALUES (%(_project_id)s, v_resource,'
            ' v_holder, v_held, %(_now)s) ON DUPLICATE KEY UPDATE'
            ' used = used + VALUES(used), updated_at = VALUES(created_at);',
            'ELSEIF v_done THEN',
            'UPDATE consumer_usages SET used = used + v_held + v_taken,'
            ' updated_at = %(_now)s WHERE project_id = %(_project_id)s'
            ' AND resource = v_resource AND consumer_id = v_holder'
            ' AND used + v_taken >= 0;',
            'SET v_done = ROW_COUNT() = 1;',
            'END IF;',
        ]
    lines += [
        'END IF;',
        'SELECT ' + ', '.join(c.name for c in sql.RESERVATION_COLUMNS)
        + ' FROM reservations WHERE uuid IN ({uuids}) AND v_done'
        ' ORDER BY id;',
        'END']
    uuids = ', '.join('%%(%s)s' % bind_name('_uuid', index)
                      for index in range(count))
    return Block('\n'.join(lines).replace('{uuids}', uuids).replace(
        '{count}', str(count)))


def end(target, count, dialect):
    """PostgreSQL's end (``target``: committed or rolled back) of ``count``
    reservations as one statement, prepared: ``end_reservations`` of the
    uuids ``_uuid_<i>``, then per resource the counts as ``END_RESERVED``
    moves them and, for a commit, what each consumer holds as
    ``consumers.add`` changes it. Its rows are the ended reservations,
    each with ``counted`` (its counts moved) and ``held`` (its consumer's
    row changed).

    One text per count: a plan made once for an array of uuids of unknown
    length may scan the table rather than look each uuid up."""
    ended = sql.end_reservations(sql.RESERVATIONS.c.uuid.in_([
        sa.bindparam(bind_name('_uuid', index), type_=sa.String)
        for index in range(count)])).cte('ended')
    commit = target == models.COMMITTED
    taken = sa.case((ended.c.delta < 0, ended.c.delta), else_=0)
    groups = (
        sa.select(ended.c.resource,
                  _sum(sa.case((ended.c.delta > 0, ended.c.delta),
                               else_=0)).label('held'),
                  _sum(taken).label('taken'),
                  _sum(ended.c.delta).label('total'))
        .group_by(ended.c.resource).cte('groups'))
    usages = sql.USAGES
    counts = dict(reserved=usages.c.reserved - groups.c.held,
                  updated_at=sa.bindparam('_now'))
    where = [usages.c.project_id == sa.bindparam('_project_id'),
             usages.c.resource == groups.c.resource,
             usages.c.reserved >= groups.c.held]
    if commit:
        counts['used'] = usages.c.used + groups.c.total
        where.append(usages.c.used + groups.c.taken >= 0)
    counted = (usages.update().where(*where).values(**counts)
               .returning(usages.c.resource).cte('counted'))
    consumer_id = sa.func.coalesce(ended.c.consumer_id, '')
    joins = ended.outerjoin(counted, counted.c.resource == ended.c.resource)
    columns = [*ended.c, counted.c.resource.is_not(None).label('counted')]
    if commit:
        changed = _add_to_consumers(ended, consumer_id, taken, counted)
        joins = joins.outerjoin(changed, sa.and_(
            changed.c.resource == ended.c.resource,
            changed.c.consumer_id == consumer_id))
        columns.append(changed.c.resource.is_not(None).label('held'))
    else:
        columns.append(sa.false().label('held'))
    return prepared.Prepared(sa.select(*columns).select_from(joins), dialect)


def _sum(value):
    return sa.cast(sa.func.sum(value), sa.BigInteger)


def _add_to_consumers(ended, consumer_id, taken, counted):
    """The CTE adding a commit's deltas to what consumers hold, of the
    resources whose counts moved (``counted``: under their usage rows'
    locks): an upsert where all are positive, a conditional UPDATE that
    takes nothing below zero otherwise. Returns (resource, consumer_id)
    of the rows it changed."""
    consumers = sql.CONSUMERS
    holders = (
        sa.select(ended.c.resource, consumer_id.label('consumer_id'),
                  _sum(ended.c.delta).label('total'),
                  _sum(taken).label('taken'))
        .join(counted, counted.c.resource == ended.c.resource)
        .group_by(ended.c.resource, consumer_id).cte('holders'))
    upsert = postgresql.insert(consumers).from_select(
        ['project_id', 'resource', 'consumer_id', 'used', 'created_at'],
        sa.select(sa.bindparam('_project_id', type_=sa.String),
                  holders.c.resource, holders.c.consumer_id,
                  holders.c.total, sa.bindparam('_now', type_=sa.DateTime))
        .where(holders.c.taken == 0))
    added = upsert.on_conflict_do_update(
        index_elements=['project_id', 'resource', 'consumer_id'],
        set_=dict(used=consumers.c.used + upsert.excluded.used,
                  updated_at=upsert.excluded.created_at),
    ).returning(consumers.c.resource, consumers.c.consumer_id).cte('added')
    taken_off = (
        consumers.update()
        .where(consumers.c.project_id == sa.bindparam('_project_id'),
               consumers.c.resource == holders.c.resource,
               consumers.c.consumer_id == holders.c.consumer_id,
               holders.c.taken < 0,
               consumers.c.used + holders.c.taken >= 0)
        .values(used=consumers.c.used + holders.c.total,
                updated_at=sa.bindparam('_now'))
        .returning(consumers.c.resource, consumers.c.consumer_id)
        .cte('taken_off'))
    return sa.union_all(sa.select(added.c.resource, added.c.consumer_id),
                        sa.select(taken_off.c.resource,
                                  taken_off.c.consumer_id)
                        ).subquery('changed')
