"""MariaDB's one statements: compound statements (``BEGIN NOT ATOMIC ...
END``) that run the steps one after the other in a transaction they
commit, or roll back and refuse (``_own_transaction``)."""

import sqlalchemy as sa
from sqlalchemy.sql import visitors

from cyquota.db import engine_tuning
from cyquota.db import models
from cyquota.db import prepared
from cyquota.quota.ledger.one_statement import binds
from cyquota.quota.ledger import statements as sql


def _own_transaction(declarations, body, commit_if):
    """A MariaDB compound statement that runs ``body`` (lines) in a
    transaction of its own and commits it if ``commit_if`` (an expression)
    holds at its end. Otherwise it rolls back and refuses (SIGNALs
    ``engine_tuning.REFUSAL``, raised as ``engine_tuning.Refused``), so
    that it sends no rows either way. An error rolls the transaction back
    and is sent on as it was raised (RESIGNAL), to be translated and
    retried as any other."""
    return '\n'.join([
        'BEGIN NOT ATOMIC', *declarations,
        'DECLARE EXIT HANDLER FOR SQLEXCEPTION'
        ' BEGIN ROLLBACK; RESIGNAL; END;',
        'START TRANSACTION;', *body,
        "IF NOT (%s) THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '%s';"
        ' END IF;' % (commit_if, engine_tuning.REFUSAL),
        'COMMIT;', 'END'])


def reserve_block(dialect, limit, count, request_id):
    """MariaDB's reserve of ``count`` resources as one compound statement:
    the conditional UPDATE of each resource in turn while every one
    changed its row (its limit, ``limit``, read once before), then (and
    with ``request_id``, only if no reserve used it before) the INSERTs,
    in a transaction of its own, committed if all were written; it
    refuses (``engine_tuning.Refused``), having written nothing, otherwise.
    Prepared (``Prepared``)."""
    def compiled(statement, index=0):
        return _compiled(binds.per_resource(statement, index), dialect)

    lines = []
    for index in range(count):
        lines += [
            'IF fits THEN',
            'SET v_limit = (%s);' % compiled(sa.select(limit), index),
            compiled(sql.reserve_if_fits(sa.literal_column('v_limit')),
                     index) + ';',
            'SET fits = ROW_COUNT() = 1;', 'END IF;']
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % compiled(sql.REQUEST_SEEN)
    lines += ['IF fits%s THEN' % seen,
              *[compiled(sql.INSERT_RESERVATION_OF_USAGE, index) + ';'
                for index in range(count)],
              'ELSE', 'SET fits = 0;', 'END IF;']
    return prepared.Prepared(_own_transaction(
        ['DECLARE fits INT DEFAULT 1;', 'DECLARE v_limit BIGINT;'], lines,
        'fits'), dialect)


def _compiled(statement, dialect):
    """``statement``'s SQL for ``dialect``, its integer literals written
    out (its other binds are the caller's)."""
    def write_out(element):
        if (isinstance(element, sa.BindParameter) and element.unique
                and type(element.value) is int):
            return sa.literal_column(str(element.value))
        return None
    return str(visitors.replacement_traverse(statement, {}, write_out)
               .compile(dialect=dialect))


def end_block(target, count, dialect):
    """MariaDB's end (``target``) of ``count`` reservations as one
    compound statement in a transaction of its own, for the common case:
    every one still reserved, not due, of the project, and all of one
    resource (and, for a commit, one consumer; for a rollback, none
    holding devices, which the step-by-step end gives back). It ends them
    (locked by uuid, as ``LOCK_RESERVATIONS``), moves the counts as
    ``END_RESERVED`` and (a commit) what the consumer holds as
    ``consumers.add``, each only where nothing goes below zero, and
    commits; it refuses (``engine_tuning.Refused``), having changed nothing, if
    it could not end them all. Prepared (``Prepared``), its binds:
    ``_uuid_<i>``, ``_project_id``, ``_due_before``, ``_now``,
    ``_status``."""
    commit = target == models.COMMITTED
    lines = [
        # Locked by the uuid index alone, as LOCK_RESERVATIONS: through
        # another index (project and status, say) it would lock entries
        # that an expiry holding the rows changes, and the two deadlock.
        # ``uuid`` is the name MariaDB gives the column's unique index.
        'UPDATE reservations FORCE INDEX (uuid)'
        ' SET status = %(_status)s, updated_at = %(_now)s'
        " WHERE uuid IN ({uuids}) AND project_id = %(_project_id)s"
        " AND status = 'reserved' AND expire >= %(_due_before)s"
        + ('' if commit else ' AND NOT devices') + ';',
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
    lines.append('END IF;')
    text = _own_transaction([
        'DECLARE v_resources, v_holders, v_done INT DEFAULT 0;',
        'DECLARE v_resource, v_holder VARCHAR(255);',
        'DECLARE v_held, v_taken BIGINT DEFAULT 0;'], lines, 'v_done')
    uuids = ', '.join('%%(%s)s' % binds.bind_name('_uuid', index)
                      for index in range(count))
    return prepared.Prepared(
        text.replace('{uuids}', uuids).replace('{count}', str(count)),
        dialect)
