"""MariaDB's one statements: compound statements (``compound``) that run
the ledger's steps one after the other in a transaction they commit, or
roll back and refuse."""

import sqlalchemy as sa

from cyquota.db.backends import mariadb as backend
from cyquota.db import models
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger.one_statement import compound
from cyquota.quota.ledger import statements as sql

_USAGES = sql.USAGES
_RESERVATIONS = sql.RESERVATIONS


def reserve_block(limit, count, request_id, dialect):
    """MariaDB's reserve of ``count`` resources as one compound statement
    (of several: ``_reserve_many``): the conditional UPDATE of the
    resource (its limit, ``limit``, read once before), then (and with
    ``request_id``, only if no reserve used it before) the INSERT, in a
    transaction of its own, committed if both were written; it refuses
    (``refusal.Refused``), having written nothing, otherwise. Prepared
    (``Prepared``), with the names of its binds."""
    if count > 1:
        return _reserve_many(limit, count, request_id, dialect)
    block, compiled, lines = _reserving_one(limit, request_id, dialect)
    lines += [compiled(sql.INSERT_RESERVATION_OF_USAGE) + ';',
              'ELSE', 'SET fits = 0;', 'END IF;']
    return block.statement(
        ['DECLARE fits INT DEFAULT 0;', 'DECLARE v_limit BIGINT;'], lines,
        'fits')


def _reserving_one(limit, request_id, dialect):
    """The block of a reserve of one resource, the ``compiled`` of its
    statements (the resource's binds, ``_<field>_0``) and its first lines:
    the limit read, the conditional UPDATE, then ``IF`` it changed the
    row (and, with ``request_id``, no reserve used it before) ``THEN``,
    left open."""
    block = compound.Block(dialect)

    def compiled(statement):
        return block.compiled(binds.per_resource(statement, 0))
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % compiled(sql.REQUEST_SEEN)
    return block, compiled, [
        'SET v_limit = (%s);' % compiled(sa.select(limit)),
        compiled(sql.reserve_if_fits(compound.variable('v_limit'))) + ';',
        'SET fits = ROW_COUNT() = 1;',
        'IF fits%s THEN' % seen]


def claiming_reserve_block(limit, request_id, dialect, steps):
    """MariaDB's reserve of one resource that claims a device (``steps``:
    ``placement.claim_steps``) as one compound statement: the conditional
    UPDATE of the usage row, as ``reserve_block``'s; the provider
    ``chosen`` (one row, read as maxima, so that none is a row too); its
    generation moved on if it is decisive and unchanged (its lock); then
    the consumer, the allocation and the reservation. It commits if all
    were written and refuses (``refusal.Refused``), having written
    nothing, otherwise."""
    block, compiled, lines = _reserving_one(limit, request_id, dialect)
    chosen = steps.chosen(backend.MARIADB).subquery('chosen')
    provider, generation = (compound.variable('v_provider'),
                            compound.variable('v_generation'))
    lines += [
        '%s INTO v_provider, v_generation, v_decisive;' % compiled(
            sa.select(*(sa.func.max(column) for column in chosen.c))),
        'SET fits = COALESCE(v_decisive, 0) = 1;',
        'ELSE', 'SET fits = 0;', 'END IF;',
        'IF fits THEN',
        compiled(steps.bump(provider, generation)) + ';',
        'SET fits = ROW_COUNT() = 1;', 'END IF;',
        'IF fits THEN',
        compiled(steps.consumer()) + ';',
        compiled(steps.allocation(provider)) + ';',
        compiled(sql.INSERT_RESERVATION_OF_USAGE) + ';', 'END IF;']
    return block.statement(
        ['DECLARE fits INT DEFAULT 0;',
         'DECLARE v_limit, v_provider, v_generation, v_decisive BIGINT;'],
        lines, 'fits')


def _reserve_many(limit, count, request_id, dialect):
    """The reserve of ``count`` resources (``_resource_<i>``, their binds
    suffixed ``_<i>``): their limits (``limit`` of each) and the ids of
    their usage rows (which never change, once there) read in one SELECT
    into ``v_limit_<i>`` and ``v_usage_<i>``; one conditional UPDATE of
    every usage row (``compound.in_resource_order``), each row by its own delta
    and limit (a CASE on its resource); if it changed them all (and, with
    ``request_id``, no reserve used it before), one INSERT of every
    reservation."""
    block = compound.Block(dialect)
    indexes = range(count)
    resources = [sa.bindparam(binds.bind_name('resource', index),
                              type_=sa.String) for index in indexes]
    limits = ['v_limit_%d' % index for index in indexes]

    def by_resource(value_of):
        """A CASE on the row's resource: ``value_of(i)`` for the i-th."""
        return sa.case(*[(_USAGES.c.resource == resources[index],
                          value_of(index)) for index in indexes])
    delta = by_resource(lambda index: sa.cast(sa.bindparam(
        binds.bind_name('delta', index)), sa.BigInteger))
    counted = (
        _USAGES.update()
        .where(_USAGES.c.project_id == sa.bindparam('_project_id'),
               _USAGES.c.resource.in_(resources),
               sql.fits(by_resource(
                   lambda index: sa.literal_column(limits[index])), delta))
        .values(reserved=_USAGES.c.reserved
                + sa.case((delta > 0, delta), else_=0),
                updated_at=sa.bindparam('_now')))
    usage_ids = ['v_usage_%d' % index for index in indexes]
    held = _RESERVATIONS.insert().values([dict(
        usage_id=sa.literal_column(usage_ids[index]),
        project_id=sa.bindparam('_project_id'),
        resource=resources[index],
        **{name: binds.per_resource(sa.bindparam(
            '_' + name, type_=_RESERVATIONS.c[name].type), index)
           for name in sql.RESERVE_COLUMNS}) for index in indexes])
    seen = ''
    if request_id:
        seen = ' AND NOT EXISTS (%s)' % block.compiled(sql.REQUEST_SEEN)
    the_usage = sa.select(_USAGES.c.id).where(*sql.THE_USAGE)
    lines = [
        '%s INTO %s;' % (block.compiled(sa.select(*[
            binds.per_resource(limit, index) for index in indexes] + [
            binds.per_resource(the_usage.scalar_subquery(), index)
            for index in indexes])), ', '.join(limits + usage_ids)),
        compound.in_resource_order(block, counted),
        # A usage row first made after the read leaves its id NULL: the
        # locked path decides.
        'SET fits = ROW_COUNT() = %d AND %s;' % (count, ' AND '.join(
            '%s IS NOT NULL' % usage_id for usage_id in usage_ids)),
        'IF fits%s THEN' % seen, block.compiled(held) + ';',
        'ELSE', 'SET fits = 0;', 'END IF;']
    return block.statement(
        ['DECLARE fits INT DEFAULT 0;',
         'DECLARE %s BIGINT;' % ', '.join(limits + usage_ids)], lines,
        'fits')


def end_block(target, count, dialect):
    """MariaDB's end (``target``) of ``count`` reservations as one
    compound statement in a transaction of its own, for the common case:
    every one still reserved, not due, of the project (for a rollback,
    none holding devices, which the step-by-step end gives back). It ends
    them, moves the counts as ``END_RESERVED`` and (a commit) what the
    consumers hold as ``consumers.add``, each only where nothing goes
    below zero, and commits; it refuses (``refusal.Refused``), having
    changed nothing, if it could not end them all. Prepared
    (``Prepared``), with the names of its binds: ``_uuid_<i>``,
    ``_project_id``, ``_due_before``, ``_now``, ``_status``.

    The end of one reservation (an attach's commit) is ``_end_one``;
    that of several, of any resources, ``_end_many``. Each of their
    steps reads and writes one table: their columns go unqualified."""
    block = compound.Block(dialect, qualified=False)
    commit = target == models.COMMITTED
    uuids = [sa.bindparam(binds.bind_name('uuid', index), type_=sa.String)
             for index in range(count)]
    chosen = sa.and_(_RESERVATIONS.c.uuid.in_(uuids),
                     *([] if commit else [~_RESERVATIONS.c.devices]))
    # Locked by the uuid index alone, as LOCK_RESERVATIONS: through
    # another index (project and status, say) it would lock entries
    # that an expiry holding the rows changes, and the two deadlock.
    ending = block.compiled(compound.through_unique_index(
        sql.ending(chosen), _RESERVATIONS.c.uuid)) + ';'
    if count == 1:
        return _end_one(block, commit, ending, uuids[0])
    return _end_many(block, commit, ending, uuids)


def _end_one(block, commit, ending, uuid):
    """The end of one reservation (``uuid``), locked by uuid, then its
    usage row, then (a commit) what its consumer holds (written for a
    batch of one resource and one consumer, which one reservation always
    is)."""
    reservations = _RESERVATIONS.c
    holder = sa.func.coalesce(reservations.consumer_id, '')
    what = sa.select(
        sa.func.count(reservations.resource.distinct()),
        sa.func.count(holder.distinct()), sa.func.min(reservations.resource),
        sa.func.min(holder),
        sa.func.sum(sa.func.greatest(reservations.delta, 0)),
        sa.func.sum(sa.func.least(reservations.delta, 0))
    ).where(reservations.uuid.in_([uuid]))
    lines = [
        ending,
        'IF ROW_COUNT() = 1 THEN',
        '%s INTO v_resources, v_holders, v_resource, v_holder, v_held,'
        ' v_taken;' % block.compiled(what),
        'END IF;',
        'IF v_resources = 1' + (' AND v_holders = 1' if commit else '')
        + ' THEN',
        _held_update(block, commit, 'v_resource'),
        'SET v_done = ROW_COUNT() = 1;',
    ]
    if commit:
        lines += _add_to_consumer(
            block, compound.variable('v_held') + compound.variable('v_taken'),
            compound.variable('v_taken'), 'v_resource', 'v_holder')
    lines.append('END IF;')
    return block.statement([
        'DECLARE v_resources, v_holders, v_done INT DEFAULT 0;',
        'DECLARE v_resource, v_holder VARCHAR(255);',
        'DECLARE v_held, v_taken BIGINT DEFAULT 0;'], lines, 'v_done')


def _held_update(block, commit, resource):
    """The usage row of ``resource`` (a variable) gives back ``v_held``
    reserved; a commit also moves ``v_held + v_taken`` into ``used``."""
    held, taken = compound.variable('v_held'), compound.variable('v_taken')
    return block.compiled(sql.end_reserved(
        (_USAGES.c.project_id == sa.bindparam('_project_id'),
         _USAGES.c.resource == compound.variable(resource, sa.String)), held,
        *((taken, held + taken) if commit else ()))) + ';'


def _end_many(block, commit, ending, uuids):
    """The end of several reservations (``uuids``), for the common cases:
    each of a resource of its own (an attach or a detach of several
    resources), or all of one resource (a commit: of one consumer). The
    reservations, locked by uuid; what each one is (``r_<i>``, ``d_<i>``,
    ``c_<i>``: resource, delta, consumer, each read by its uuid, which
    costs less than any query that groups them); then the usage rows
    (``compound.in_resource_order``); then (a commit) what the consumers hold:
    one upsert where every delta is positive, else reservation by
    reservation. Reservations of one resource among others it leaves to
    the steps (it refuses)."""
    reservations = _RESERVATIONS.c
    indexes = range(len(uuids))
    r, c = ([compound.variable('%s_%d' % (name, index), sa.String)
             for index in indexes] for name in 'rc')
    d = [compound.variable('d_%d' % index) for index in indexes]

    def pairs(term):
        """``term`` (of ``%(i)d`` and ``%(j)d``) of every two."""
        return ' AND '.join(term % dict(i=i, j=j) for i in indexes
                            for j in indexes if i < j)

    def by_resource(value_of):
        return sa.case(*[(r[index], value_of(index)) for index in indexes],
                       value=_USAGES.c.resource)
    counted = sql.end_reserved(
        (_USAGES.c.project_id == sa.bindparam('_project_id'),
         _USAGES.c.resource.in_(r)),
        by_resource(lambda i: sa.func.greatest(d[i], 0)),
        *((by_resource(lambda i: sa.func.least(d[i], 0)),
           by_resource(lambda i: d[i])) if commit else ()))
    lines = [
        ending,
        'SET v_done = ROW_COUNT() = %d;' % len(uuids),
        'IF v_done THEN',
        *['%s INTO r_%d, d_%d, c_%d;' % (block.compiled(sa.select(
            reservations.resource, reservations.delta,
            sa.func.coalesce(reservations.consumer_id, '')
        ).where(reservations.uuid == uuids[i])), i, i, i) for i in indexes],
        'END IF;',
        'IF v_done AND %s THEN' % pairs('r_%(i)d <> r_%(j)d'),
        compound.in_resource_order(block, counted),
        'SET v_done = ROW_COUNT() = %d;' % len(uuids),
    ]
    if commit:
        lines += [
            'IF v_done AND %s THEN' % ' AND '.join(
                'd_%d > 0' % i for i in indexes),
            block.compiled(_upsert_consumers(
                [(r[i], c[i], d[i]) for i in indexes])) + ';',
            'ELSE',
            *[line for i in indexes for line in _add_to_consumer(
                block, d[i], sa.func.least(d[i], 0), 'r_%d' % i,
                'c_%d' % i)],
            'END IF;']
    held = ' + '.join('GREATEST(d_%d, 0)' % i for i in indexes)
    taken = (' + '.join('LEAST(d_%d, 0)' % i for i in indexes)
             if commit else '0')
    lines += [
        'ELSEIF v_done AND %s THEN' % pairs(
            'r_%(i)d = r_%(j)d' + (' AND c_%(i)d = c_%(j)d' if commit
                                   else '')),
        'SET v_held = %s, v_taken = %s;' % (held, taken),
        _held_update(block, commit, 'r_0'),
        'SET v_done = ROW_COUNT() = 1;',
    ]
    if commit:
        lines += _add_to_consumer(
            block, compound.variable('v_held') + compound.variable('v_taken'),
            compound.variable('v_taken'), 'r_0', 'c_0')
    lines += ['ELSE', 'SET v_done = 0;', 'END IF;']
    return block.statement([
        'DECLARE v_done INT DEFAULT 0;',
        'DECLARE v_held, v_taken BIGINT;',
        *['DECLARE r_%d, c_%d VARCHAR(255); DECLARE d_%d BIGINT;'
          % (i, i, i) for i in indexes]], lines, 'v_done')


def _upsert_consumers(holdings):
    """``consumers.upsert`` of ``holdings``: (resource, consumer, amount)
    of the project, each an SQL expression."""
    return consumers.upsert(backend.MARIADB).values([dict(
        project_id=sa.bindparam('_project_id'), resource=resource,
        consumer_id=consumer, used=amount, created_at=sa.bindparam('_now'))
        for resource, consumer, amount in holdings])


def _add_to_consumer(block, amount, taken, resource, consumer):
    """The lines adding ``amount`` to what ``consumer`` holds of
    ``resource`` (variables), once the usage rows moved (``v_done``), as
    ``consumers.add``: an upsert where nothing is taken (``taken``, the
    negative part, is 0), else a conditional UPDATE that takes nothing
    below zero."""
    resource = compound.variable(resource, sa.String)
    consumer = compound.variable(consumer, sa.String)
    return [
        'IF v_done AND %s = 0 THEN' % block.compiled(taken),
        block.compiled(_upsert_consumers([(resource, consumer, amount)]))
        + ';',
        'ELSEIF v_done THEN',
        block.compiled(sql.add_to_consumer(resource, consumer, amount,
                                           taken)) + ';',
        'SET v_done = ROW_COUNT() = 1;',
        'END IF;']
