"""The enforcement-model protocol: what the ledger asks of a model.

An enforcement model decides what a project may take (``flat``,
``strict_two_level``). The ledger calls every model through the same few
methods, under its own locks, and never asks which model it has:

``project_limits(context, project_id, resources)``
    ``{resource: limit}`` the project itself is held to (-1: unlimited).
``limit_sql()``
    The project's limit of one resource as a SQL expression over the bind
    parameters ``_project_id``, ``_resource`` and ``_default``, or None.
``decides_by_own_row``
    True when the project's own usage row and limit alone decide a
    reserve, so that one conditional UPDATE per resource may do it.
``lock(context, conn, project_id, resources, create)``
    Lock what the model's rule reads beyond the project's own usage rows
    (taken before them, see the ledger's lock order) and return a
    ``Scope``; ``create`` registers what is missing.
``read(context, conn, project_id, resources)``
    The same ``Scope`` without locks, for reports.
``find_drift(context, root_id=None)`` / ``sync(context, project_id=None)``
    Check and repair the model's own aggregate rows against the usage
    rows they sum (none for flat).
``check_parent``, ``check_limit``, ``check_join``
    Judge writes to the embedded limit store (the store gives the facts,
    under its locks; see ``limits.local``).

A ``Scope`` is the model's part in one transaction of one project: its
``project_limits``; ``track(usages)`` once the usage rows are locked;
``over(resource, delta)``, an ``overs`` entry or None; ``write(conn,
usages)`` after the ledger has written the usage rows; ``report(resource)``,
extra keys of the usage document; ``levels(resource)``, the ``Level``s
above the project that a lease is checked at (none for flat).
"""

import dataclasses


@dataclasses.dataclass
class Level:
    """One level a lease is checked at: the project, or its tree.

    :ivar scope: ``project`` or ``tree``, as in ``overs``.
    :ivar holder_id: the project's id, or the tree root's.
    :ivar calendar_key: the ``lease_reservations`` column that groups the
        leases of this level (``project_id`` or ``root_id``).
    :ivar counts: the locked row (``used``, ``reserved``, ``promised``,
        ``leased``), changed in memory.
    :ivar table: the row's table, written by ``id``.
    """

    scope: str
    holder_id: str
    calendar_key: str
    limit: int
    counts: object
    table: object


def over_entry(holder_id, resource, scope, limit, counts, requested):
    """An ``overs`` entry of ``OverQuota`` for ``counts`` (with ``used``,
    ``reserved`` and ``promised``); ``promised``, what pending leases hold
    at their peak, is told when it played a part."""
    entry = dict(project_id=holder_id, resource=resource, scope=scope,
                 limit=limit, used=counts.used, reserved=counts.reserved,
                 requested=requested)
    if counts.promised:
        entry['promised'] = counts.promised
    return entry


def usage_view(limit, used, reserved, leased=0, promised=0):
    """``{limit, used, reserved, leased, promised, available}``:
    available is what an ordinary reserve may still take under ``limit``
    (-1 when unlimited, never below zero); ``leased`` is part of ``used``
    and ``promised`` (the peak of pending leases) must stay free."""
    available = -1 if limit < 0 else max(
        0, limit - used - reserved - promised)
    return {'limit': limit, 'used': used, 'reserved': reserved,
            'leased': leased, 'promised': promised, 'available': available}
