"""What the agents report as really attached, for repair.

An agent sends the full list of its host's attachments
(``report_allocations`` over RPC); the latest report of each host replaces
the one before. ``reported_usage`` and ``reported_consumer_usage`` sum the
latest reports over all hosts, to be compared with the ledger's counts.
"""

import re

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import attachment_models
from cyquota.db import models
from cyquota import exception
from cyquota.quota import resources
from cyquota.quota import validation

_reports = attachment_models.HostReport.__table__
_allocations = attachment_models.HostAllocation.__table__

#: Most items one report may carry (a host has far fewer accelerators).
MAX_REPORT_ITEMS = 10000

_FIELDS = ('project_id', 'resource', 'consumer_id', 'amount')
_NAME = re.compile(r'^[\x21-\x7e]{1,255}$')


def _check_item(host, index, item):
    """One allocation as a dict of the four fields, or an Invalid naming the
    item and the field."""
    where = 'allocations[%d]' % index

    def invalid(reason):
        return exception.InvalidAllocation(host=host,
                                           reason='%s: %s' % (where, reason))

    if not isinstance(item, dict):
        raise invalid('expected an object with %s, got %r'
                      % (', '.join(_FIELDS), item))
    missing = [f for f in _FIELDS if f not in item]
    unknown = sorted(str(f) for f in item if f not in _FIELDS)
    if missing or unknown:
        raise invalid('missing %s; unknown %s' % (missing or 'nothing',
                                                  unknown or 'nothing'))
    try:
        validation.project_id(item['project_id'])
        resources.check_resource(item['resource'])
    except exception.Invalid as error:
        # The same specific error, told which item it is about.
        raise type(error)('%s: %s' % (where, error.message), **error.kwargs)
    consumer_id = item['consumer_id']
    if not isinstance(consumer_id, str) or not _NAME.match(consumer_id):
        raise invalid('consumer_id must be 1 to 255 printable ASCII '
                      'characters without spaces, got %r' % (consumer_id,))
    amount = item['amount']
    if (isinstance(amount, bool) or not isinstance(amount, int)
            or not 0 < amount <= models.MAX_COUNT):
        raise invalid('amount must be an integer from 1 to %d, got %r'
                      % (models.MAX_COUNT, amount))
    return {f: item[f] for f in _FIELDS}


def check_report(host, allocations):
    """Validate a report; returns its items. Raises a specific
    ``exception.Invalid`` naming the host, the item and the field."""
    if not isinstance(host, str) or not _NAME.match(host):
        raise exception.InvalidAllocation(
            host=host, reason='host must be 1 to 255 printable ASCII '
                              'characters without spaces')
    if not isinstance(allocations, (list, tuple)):
        raise exception.InvalidAllocation(
            host=host, reason='allocations must be a list, got %r'
                              % (allocations,))
    if len(allocations) > MAX_REPORT_ITEMS:
        raise exception.InvalidAllocation(
            host=host, reason='%d allocations, more than the %d one report '
                              'may carry' % (len(allocations),
                                             MAX_REPORT_ITEMS))
    items, seen = [], set()
    for index, item in enumerate(allocations):
        item = _check_item(host, index, item)
        key = (item['consumer_id'], item['resource'])
        if key in seen:
            raise exception.InvalidAllocation(
                host=host, reason='allocations[%d]: consumer %s has %s twice'
                                  % (index, key[0], key[1]))
        seen.add(key)
        items.append(item)
    return items


def record_report(context, host, allocations):
    """Make ``allocations`` (a list of ``{"project_id", "resource",
    "consumer_id", "amount"}``) the latest report of ``host``, replacing the
    one before. Bad input raises ``exception.Invalid`` and changes nothing.
    """
    _replace_report(context, host, check_report(host, allocations))


@db_api.retry_on_conflict
def _replace_report(context, host, items):
    now = models.utcnow()
    with db_api.writer(context) as session:
        # The host's row is the lock that orders its reports; the first
        # report of a host may lose a race to insert it and is retried.
        known = session.execute(
            sa.select(_reports.c.host).where(_reports.c.host == host)
            .with_for_update()).first()
        if known is None:
            session.execute(_reports.insert().values(
                host=host, reported_at=now, created_at=now))
        else:
            session.execute(_reports.update()
                            .where(_reports.c.host == host)
                            .values(reported_at=now))
        session.execute(_allocations.delete()
                        .where(_allocations.c.host == host))
        if items:
            session.execute(_allocations.insert(),
                            [dict(item, host=host) for item in items])


def _summed(context, columns, project_id):
    query = (sa.select(*columns, sa.func.sum(_allocations.c.amount))
             .group_by(*columns))
    if project_id is not None:
        query = query.where(_allocations.c.project_id == project_id)
    with db_api.reader(context) as session:
        return {tuple(row[:-1]): int(row[-1])
                for row in session.execute(query)}


def reported_usage(context, project_id=None):
    """``{(project_id, resource): amount}`` over the latest report of every
    host (only ``project_id``'s when given)."""
    return _summed(context, (_allocations.c.project_id,
                             _allocations.c.resource), project_id)


def reported_consumer_usage(context, project_id=None):
    """``{(project_id, resource, consumer_id): amount}`` over the latest
    report of every host (only ``project_id``'s when given)."""
    return _summed(context, (_allocations.c.project_id,
                             _allocations.c.resource,
                             _allocations.c.consumer_id), project_id)


def host_reports(context):
    """``{host: reported_at}`` (naive UTC) of every host that reported."""
    with db_api.reader(context) as session:
        return dict(session.execute(
            sa.select(_reports.c.host, _reports.c.reported_at)).all())
