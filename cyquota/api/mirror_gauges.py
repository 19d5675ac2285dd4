"""The Placement mirror's freshness as gauges, read from the database at
each scrape of ``GET /metrics`` (``metrics_page``), so any process shows
what the conductors last did: the age of the copy and the providers kept
although Placement dropped them. Shown only with ``[placement] source =
placement``."""

from prometheus_client import core
import sqlalchemy as sa

from cyquota.cloud import mirror_state
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import mirror_models

_kept = mirror_models.KeptProvider.__table__


class MirrorCollector:
    """A prometheus_client collector of the ``cyquota_placement_mirror_*``
    gauges."""

    def describe(self):
        # Nothing to read at registration: the rows come at scrape time.
        return []

    def collect(self):
        if CONF.placement.source != 'placement':
            return []
        context = cyquota_context.get_admin_context()
        age = mirror_state.read(context)['age']
        with db_api.reader(context) as session:
            kept = session.execute(
                sa.select(sa.func.count()).select_from(_kept)).scalar()
        return [
            core.GaugeMetricFamily(
                'cyquota_placement_mirror_age_seconds', 'Seconds since the '
                'copy of the cloud\'s Placement last succeeded (-1: never).',
                value=-1 if age is None else age),
            core.GaugeMetricFamily(
                'cyquota_placement_mirror_kept', 'Providers gone from '
                'Placement that the copy keeps because leases or '
                'reservations hold them.', value=kept),
        ]
