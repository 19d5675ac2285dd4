"""What the conductors' periodic witness last found, as gauges read from
the database at each scrape of ``GET /metrics`` (``metrics_page``), so any
process shows it: per resource and figure, how many projects the ledger
and the cloud's Placement count differently, and when it last ran. Shown
only with ``[placement] source = placement`` and a ``witness_interval``.
No project is named: ``cyquota-manage quota check --against-placement``
and the conductor's WARNING lines say which."""

import datetime

from prometheus_client import core

from cyquota.cloud import witness
from cyquota.cloud import witness_rounds
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.quota import resources


class WitnessCollector:
    """A prometheus_client collector of ``cyquota_placement_drift`` and
    ``cyquota_placement_witness_last_run_timestamp_seconds``."""

    def describe(self):
        # Nothing to read at registration: the rows come at scrape time.
        return []

    def collect(self):
        if (CONF.placement.source != 'placement'
                or not CONF.placement.witness_interval):
            return []
        ran_at, drift = witness_rounds.last_run(
            cyquota_context.get_admin_context())
        last_run = core.GaugeMetricFamily(
            'cyquota_placement_witness_last_run_timestamp_seconds',
            'When the periodic witness last compared the ledger with the '
            'cloud\'s Placement (Unix time; 0: never).',
            value=ran_at.replace(tzinfo=datetime.timezone.utc).timestamp()
            if ran_at else 0)
        if ran_at is None:
            return [last_run]
        differing = core.GaugeMetricFamily(
            'cyquota_placement_drift', 'Projects whose count of a resource '
            'differs between the ledger and the cloud\'s Placement at the '
            'last run of the periodic witness, by resource and figure '
            '(used; leased with write_leases).', labels=['resource', 'field'])
        fields = ((witness.USED, witness.LEASED)
                  if CONF.placement.write_leases else (witness.USED,))
        for resource in sorted(set(resources.known_resources())
                               | {key[0] for key in drift}):
            for field in fields:
                differing.add_metric([resource, field],
                                     drift.get((resource, field), 0))
        return [last_run, differing]
