"""Binds of accelerator requests that Cyborg finished after answering,
resolved by the conductor (SPEC 3.7).

cyquota's filter in Cyborg's API reserves a unit per ARQ at a bind
(request id ``arq-<ARQ uuid>``) and settles it when Cyborg's answer shows
the outcome; a bind still ``BindStarted`` then, or whose settling did not
reach cyquota, stays reserved. Each run reads those ARQs through Cyborg's
REST API (``[cyborg]`` options) and does what their state says
(``arq_reader.outcome``): Bound commits, BindFailed, Unbound or a deleted
ARQ rolls back, a bind under way waits for the next run (or the
reservation's expiry).
"""

import collections

from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from cyquota.cyborg import arq_reader
from cyquota.db import models
from cyquota import exception
from cyquota import quota

LOG = logging.getLogger(__name__)

GROUP = 'cyborg'

#: Reserved rows read per query.
PAGE_SIZE = 500


def load_reader(conf):
    """An :class:`arq_reader.ArqReader` of ``conf``'s ``[cyborg]``
    options."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return arq_reader.ArqReader(ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth))


def _binds_reserved(context):
    """``{ARQ uuid: (project_id, [reservation uuids])}`` of the reserved
    rows of binds."""
    binds = collections.OrderedDict()
    marker = None
    while True:
        rows = quota.QUOTAS.list_reservations(
            context, status=models.RESERVED, limit=PAGE_SIZE, marker=marker)
        for row in rows:
            arq_uuid = arq_reader.arq_of_request(row['request_id'])
            if arq_uuid is not None:
                binds.setdefault(arq_uuid, (row['project_id'], []))[1] \
                    .append(row['uuid'])
        if len(rows) < PAGE_SIZE:
            return binds
        marker = rows[-1]['uuid']


def resolve(context, reader):
    """Commit or roll back each reserved bind whose ARQ's state says so;
    returns ``{'commit': n, 'rollback': n, 'wait': n}``. A run that cannot
    read Cyborg stops there (a WARNING line) and leaves the rest to the
    next."""
    done = collections.Counter()
    for arq_uuid, (project_id, uuids) in _binds_reserved(context).items():
        try:
            decision = arq_reader.outcome(reader.get_arq(arq_uuid))
        except arq_reader.CyborgUnavailable as error:
            LOG.warning('Cannot read Cyborg to resolve the binds still '
                        'reserved: %s', error)
            break
        try:
            if decision == arq_reader.COMMIT:
                quota.QUOTAS.commit(context, project_id, uuids)
            elif decision == arq_reader.ROLLBACK:
                quota.QUOTAS.rollback(context, project_id, uuids)
        except exception.ReservationConflict:
            continue  # The filter (or another conductor) settled it.
        done[decision] += 1
    if done[arq_reader.COMMIT] or done[arq_reader.ROLLBACK]:
        LOG.info('Resolved binds of accelerator requests: %d committed, '
                 '%d rolled back', done[arq_reader.COMMIT],
                 done[arq_reader.ROLLBACK])
    return dict(done)
