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
    """MariaDB's reserve of ``count`` resources as one compound statement
    (of several: ``_reserve_many``): the conditional UPDATE of the
    resource (its limit, ``limit``, read once before), then (and with
    ``request_id``, only if no reserve used it before) the INSERT, in a
    transaction of its own, committed if both were written; it refuses
    (``engine_tuning.Refused``), having written nothing, otherwise.
    Prepared (``Prepared``)."""
    if count > 1:
        return _reserve_many(dialect, limit, count, request_id)

    def compiled(statement):
        return _compiled(binds.per_resource(statement, 0), dialect)
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % compiled(sql.REQUEST_SEEN)
    lines = [
        'IF fits THEN',
        'SET v_limit = (%s);' % compiled(sa.select(limit)),
        compiled(sql.reserve_if_fits(sa.literal_column('v_limit'))) + ';',
        'SET fits = ROW_COUNT() = 1;', 'END IF;',
        'IF fits%s THEN' % seen,
        compiled(sql.INSERT_RESERVATION_OF_USAGE) + ';',
        'ELSE', 'SET fits = 0;', 'END IF;']
    return prepared.Prepared(_own_transaction(
        ['DECLARE fits INT DEFAULT 1;', 'DECLARE v_limit BIGINT;'], lines,
        'fits'), dialect)


def _reserve_many(dialect, limit, count, request_id):
    """The reserve of ``count`` resources (``_resource_<i>``, their binds
    suffixed ``_<i>``): their limits (``limit`` of each) and the ids of
    their usage rows (which never change, once there) read in one SELECT
    into ``v_limit_<i>`` and ``v_usage_<i>``; one conditional UPDATE of every
    usage row through their unique index, in resource order (two
    reserves, or a reserve and an end, of one project queue on the first
    row they share rather than deadlock), each row by its own delta and
    limit (a CASE on its resource); if it changed them all (and, with
    ``request_id``, no reserve used it before), one INSERT of every
    reservation."""
    usages = sql.USAGES
    indexes = range(count)
    resources = [sa.bindparam(binds.bind_name('_resource', index),
                              type_=sa.String) for index in indexes]
    limits = ['v_limit_%d' % index for index in indexes]

    def by_resource(value_of):
        """A CASE on the row's resource: ``value_of(i)`` for the i-th."""
        return sa.case(*[(usages.c.resource == resources[index],
                          value_of(index)) for index in indexes])
    delta = by_resource(lambda index: sa.cast(sa.bindparam(
        binds.bind_name('_delta', index)), sa.BigInteger))
    rows = (usages.c.project_id == sa.bindparam('_project_id'),
            usages.c.resource.in_(resources))
    counted = (
        usages.update()
        .where(*rows, sql.fits(by_resource(
            lambda index: sa.literal_column(limits[index])), delta))
        .values(reserved=usages.c.reserved
                + sa.case((delta > 0, delta), else_=0),
                updated_at=sa.bindparam('_now')))
    usage_ids = ['v_usage_%d' % index for index in indexes]
    held = sql.RESERVATIONS.insert().values([dict(
        usage_id=sa.literal_column(usage_ids[index]),
        project_id=sa.bindparam('_project_id'),
        resource=resources[index],
        **{name: binds.per_resource(sa.bindparam(
            '_' + name, type_=sql.RESERVATIONS.c[name].type), index)
           for name in sql.RESERVE_COLUMNS}) for index in indexes])
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % _compiled(sql.REQUEST_SEEN, dialect)
    the_usage = sa.select(usages.c.id).where(*sql.THE_USAGE)
    lines = [
        '%s INTO %s;' % (_compiled(sa.select(*[
            binds.per_resource(limit, index) for index in indexes] + [
            binds.per_resource(the_usage.scalar_subquery(), index)
            for index in indexes]), dialect),
            ', '.join(limits + usage_ids)),
        _compiled(counted, dialect).replace(
            'UPDATE quota_usages SET', 'UPDATE quota_usages FORCE INDEX'
            ' (uniq_quota_usages0project_id0resource) SET', 1)
        + ' ORDER BY quota_usages.resource;',
        # A usage row first made after the read leaves its id NULL: the
        # locked path decides.
        'SET fits = ROW_COUNT() = %d AND %s;' % (count, ' AND '.join(
            '%s IS NOT NULL' % usage_id for usage_id in usage_ids)),
        'IF fits%s THEN' % seen, _compiled(held, dialect) + ';',
        'ELSE', 'SET fits = 0;', 'END IF;']
    return prepared.Prepared(_own_transaction(
        ['DECLARE fits INT DEFAULT 0;',
         'DECLARE %s BIGINT;' % ', '.join(limits + usage_ids)], lines,
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
    every one still reserved, not due, of the project (for a rollback,
    none holding devices, which the step-by-step end gives back). It ends
    them, moves the counts as ``END_RESERVED`` and (a commit) what the
    consumers hold as ``consumers.add``, each only where nothing goes
    below zero, and commits; it refuses (``engine_tuning.Refused``),
    having changed nothing, if it could not end them all. Prepared
    (``Prepared``), its binds: ``_uuid_<i>``, ``_project_id``,
    ``_due_before``, ``_now``, ``_status``.

    The end of one reservation (an attach's commit) is ``_end_one``;
    that of several, of any resources, ``_end_many``."""
    if count == 1:
        text = _end_one(target)
    else:
        text = _end_many(target, count)
    uuids = ', '.join('%%(%s)s' % binds.bind_name('_uuid', index)
                      for index in range(count))
    return prepared.Prepared(
        text.replace('{uuids}', uuids).replace('{count}', str(count)),
        dialect)


def _ending(commit):
    """The UPDATE ending reservations ``{uuids}``, locked by uuid."""
    # Locked by the uuid index alone, as LOCK_RESERVATIONS: through
    # another index (project and status, say) it would lock entries
    # that an expiry holding the rows changes, and the two deadlock.
    # ``uuid`` is the name MariaDB gives the column's unique index.
    return (
        'UPDATE reservations FORCE INDEX (uuid)'
        ' SET status = %(_status)s, updated_at = %(_now)s'
        " WHERE uuid IN ({uuids}) AND project_id = %(_project_id)s"
        " AND status = 'reserved' AND expire >= %(_due_before)s"
        + ('' if commit else ' AND NOT devices') + ';')


def _end_one(target):
    """The end of one reservation, locked by uuid, then its usage row,
    then (a commit) what its consumer holds (written for a batch of one
    resource and one consumer, which one reservation always is)."""
    commit = target == models.COMMITTED
    lines = [
        _ending(commit),
        'IF ROW_COUNT() = {count} THEN',
        "SELECT COUNT(DISTINCT resource), COUNT(DISTINCT COALESCE("
        "consumer_id, '')), MIN(resource), MIN(COALESCE(consumer_id, '')),"
        ' SUM(GREATEST(delta, 0)), SUM(LEAST(delta, 0))'
        ' INTO v_resources, v_holders, v_resource, v_holder, v_held, v_taken'
        ' FROM reservations WHERE uuid IN ({uuids});',
        'END IF;',
        'IF v_resources = 1' + (' AND v_holders = 1' if commit else '')
        + ' THEN',
        _held_update(commit, 'v_resource'),
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
    return _own_transaction([
        'DECLARE v_resources, v_holders, v_done INT DEFAULT 0;',
        'DECLARE v_resource, v_holder VARCHAR(255);',
        'DECLARE v_held, v_taken BIGINT DEFAULT 0;'], lines, 'v_done')


def _held_update(commit, resource):
    """The usage row of ``resource`` (a variable) gives back ``v_held``
    reserved; a commit also moves ``v_held + v_taken`` into ``used``."""
    return ('UPDATE quota_usages SET reserved = reserved - v_held,'
            + (' used = used + v_held + v_taken,' if commit else '')
            + ' updated_at = %(_now)s WHERE project_id = %(_project_id)s'
            ' AND resource = ' + resource + ' AND reserved >= v_held'
            + (' AND used + v_taken >= 0' if commit else '') + ';')


def _end_many(target, count):
    """The end of ``count`` reservations, for the common cases: each of a
    resource of its own (an attach or a detach of several resources), or
    all of one resource (a commit: of one consumer). The reservations,
    locked by uuid; what each one is (``r_<i>``, ``d_<i>``, ``c_<i>``:
    resource, delta, consumer, each read by its uuid, which costs less
    than any query that groups them); then the usage rows, in one UPDATE
    through their unique index in resource order (two ends, or an end
    and a reserve, of one project queue on the first row they share
    rather than deadlock); then (a commit) what the consumers hold: one
    upsert where every delta is positive, else reservation by
    reservation. Reservations of one resource among others it leaves to
    the steps (it refuses)."""
    commit = target == models.COMMITTED
    indexes = range(count)

    def each(term, join=' '):
        return join.join(term.replace('{i}', str(i)) for i in indexes)

    def pairs(term):
        return ' AND '.join(term.replace('{i}', str(i)).replace(
            '{j}', str(j)) for i in indexes for j in indexes if i < j)

    def by_resource(value):
        return 'CASE resource %s END' % each('WHEN r_{i} THEN ' + value)
    lines = [
        _ending(commit),
        'SET v_done = ROW_COUNT() = {count};',
        'IF v_done THEN',
        each("SELECT resource, delta, COALESCE(consumer_id, '')"
             ' INTO r_{i}, d_{i}, c_{i} FROM reservations'
             ' WHERE uuid = %(_uuid_{i})s;', '\n'),
        'END IF;',
        'IF v_done AND %s THEN' % pairs('r_{i} <> r_{j}'),
        'UPDATE quota_usages FORCE INDEX'
        ' (uniq_quota_usages0project_id0resource) SET reserved = reserved - '
        + by_resource('GREATEST(d_{i}, 0)') + ','
        + (' used = used + ' + by_resource('d_{i}') + ',' if commit else '')
        + ' updated_at = %(_now)s WHERE project_id = %(_project_id)s'
        ' AND resource IN (' + each('r_{i}', ', ') + ') AND reserved >= '
        + by_resource('GREATEST(d_{i}, 0)')
        + (' AND used + ' + by_resource('LEAST(d_{i}, 0)') + ' >= 0'
           if commit else '') + ' ORDER BY resource;',
        'SET v_done = ROW_COUNT() = {count};',
    ]
    if commit:
        lines += [
            'IF v_done AND %s THEN' % each('d_{i} > 0', ' AND '),
            _UPSERT_CONSUMERS % each(
                '(%(_project_id)s, r_{i}, c_{i}, d_{i}, %(_now)s)', ', '),
            'ELSE',
            *[line.replace('{i}', str(index)) for index in indexes
              for line in _add_to_consumer('d_{i}', 'LEAST(d_{i}, 0)',
                                           'r_{i}', 'c_{i}')],
            'END IF;']
    lines += [
        'ELSEIF v_done AND %s THEN' % pairs(
            'r_{i} = r_{j} AND c_{i} = c_{j}' if commit else 'r_{i} = r_{j}'),
        'SET v_held = %s, v_taken = %s;' % (
            each('GREATEST(d_{i}, 0)', ' + '),
            each('LEAST(d_{i}, 0)', ' + ') if commit else '0'),
        _held_update(commit, 'r_0'),
        'SET v_done = ROW_COUNT() = 1;',
    ]
    if commit:
        lines += _add_to_consumer('v_held + v_taken', 'v_taken', 'r_0', 'c_0')
    lines += ['ELSE', 'SET v_done = 0;', 'END IF;']
    return _own_transaction([
        'DECLARE v_done INT DEFAULT 0;',
        'DECLARE v_held, v_taken BIGINT;',
        each('DECLARE r_{i}, c_{i} VARCHAR(255); DECLARE d_{i} BIGINT;',
             '\n')], lines, 'v_done')


# The upsert of what consumers hold: VALUES rows of project, resource,
# consumer, amount, time.
_UPSERT_CONSUMERS = (
    'INSERT INTO consumer_usages (project_id, resource, consumer_id, used,'
    ' created_at) VALUES %s ON DUPLICATE KEY UPDATE'
    ' used = used + VALUES(used), updated_at = VALUES(created_at);')


def _add_to_consumer(amount, taken, resource, consumer):
    """The lines adding ``amount`` to what ``consumer`` holds of
    ``resource``, once the usage rows moved (``v_done``), as
    ``consumers.add``: an upsert where nothing is taken (``taken``, the
    negative part, is 0), else a conditional UPDATE that takes nothing
    below zero (SQL expressions, all four)."""
    return [
        'IF v_done AND %s = 0 THEN' % taken,
        _UPSERT_CONSUMERS % '(%%(_project_id)s, %s, %s, %s, %%(_now)s)' % (
            resource, consumer, amount),
        'ELSEIF v_done THEN',
        'UPDATE consumer_usages SET used = used + %s, updated_at = %%(_now)s'
        ' WHERE project_id = %%(_project_id)s AND resource = %s'
        ' AND consumer_id = %s AND used + %s >= 0;' % (
            amount, resource, consumer, taken),
        'SET v_done = ROW_COUNT() = 1;',
        'END IF;']
