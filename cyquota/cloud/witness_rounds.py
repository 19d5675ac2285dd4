"""The witness run by the conductor: every ``[placement]
witness_interval`` seconds (with ``source = placement``) one conductor,
whatever their number, compares the ledger with the cloud's Placement as
``cyquota-manage quota check --against-placement`` does
(``witness.check``, every project). Each difference is a WARNING line, and
what it found is recorded for the gauges of ``GET /metrics``
(``cyquota.api.witness_gauges``). It never repairs: the operator's
``quota sync --from-placement`` does."""

import collections

from oslo_log import log as logging
import sqlalchemy as sa

from cyquota.cloud import mirror_state
from cyquota.cloud import placement_errors
from cyquota.cloud import witness
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota import quota

LOG = logging.getLogger(__name__)

_drift = mirror_models.WitnessDrift.__table__
_ROUND = mirror_models.WITNESS_ID


def periodic_check(context, host, reader=None):
    """The conductor's periodic witness: compare unless another conductor
    runs this round. A Placement that cannot be read is one WARNING line
    and leaves the last record as it was.

    :param reader: a ``witness.Witness`` (by default one made from
        ``[placement]``).
    :returns: the ``witness.Difference`` list, or None when nothing was
        compared.
    """
    if not mirror_state.claim_round(context, host,
                                    CONF.placement.witness_interval, _ROUND):
        return None
    try:
        found = witness.check(
            context, quota.QUOTAS, reader or witness.Witness.from_conf(),
            leases=CONF.placement.write_leases)
    except (witness.Unusable, placement_errors.PlacementError) as error:
        mirror_state.failed(context, str(error), _ROUND)
        LOG.warning('Placement witness not run: %s', error)
        return None
    for difference in found:
        LOG.warning('Placement witness: project %s, resource %s, %s: '
                    'ledger %d, Placement %d', difference.project_id,
                    difference.resource, difference.field, difference.ledger,
                    difference.placement)
    record(context, found)
    return found


@db_api.retry_on_conflict
def record(context, found):
    """Record a run that found the ``witness.Difference`` list ``found``:
    per resource and figure, the number of projects that differ."""
    projects = collections.Counter((d.resource, d.field) for d in found)
    with db_api.writer(context) as session:
        session.execute(_drift.delete())
        if projects:
            session.execute(_drift.insert(), [
                {'resource': resource, 'field': field, 'projects': n}
                for (resource, field), n in sorted(projects.items())])
        mirror_state.synced(session, _ROUND)


def last_run(context):
    """``(ran_at, {(resource, field): projects})``: when the periodic
    witness last ran (None: never) and the figures it found differing."""
    with db_api.reader(context) as session:
        drift = {(row.resource, row.field): row.projects
                 for row in session.execute(sa.select(_drift))}
    return mirror_state.read(context, _ROUND)['synced_at'], drift
