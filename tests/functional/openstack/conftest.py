"""Tests on the OpenStack test bed (``servers.openstack_bed``):
one bed a session, started by the first test that asks for it (minutes
with the virtualenvs cached, more while they are built). Their modules
carry the marker ``openstack_bed``: ``-m 'not openstack_bed'`` leaves them
out.

The session's bed is the cloud an operator of cyquota would run: two
compute hosts (16 fake FPGAs each), cyquota's filter in Cyborg's pipeline,
Nova's isolated aggregates on, cyquota's mirror, witness and Cyborg reads
every few seconds, its notifications on the bed's RabbitMQ.
"""

import threading
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from cyquota.conf import conductor as conductor_conf
from servers.openstack_bed import bed as openstack_bed
from tests.functional.openstack import books

#: Seconds between the conductor's rounds on the bed (their defaults are
#: minutes: a test would wait for them).
ROUND = 3


@pytest.fixture(scope='package')
def bed():
    """The running ``Bed``, torn down after the last test of this
    package: its processes hold 2 GiB and keep polling."""
    cyquota_conf = {
        'placement': {'sync_interval': ROUND, 'witness_interval': ROUND},
        'cyborg': {'bind_check_interval': ROUND},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
    }
    with openstack_bed.Bed(
            computes=2, cyquota_filter=True, cyquota_conf=cyquota_conf,
            nova_conf={'scheduler': {
                'enable_isolated_aggregate_filtering': 'true'}}) as running:
        yield running


@pytest.fixture
def project(bed):
    """The demo project, with no limit of cyquota's own left behind."""
    project_id = books.demo_project(bed)
    yield project_id
    books.clear_limit(bed, project_id)


@pytest.fixture(scope='package')
def fpga_profile(bed):
    """A device profile of one fake FPGA."""
    return bed.device_profile()


class _Heard:
    """A notification listener's endpoint: ``{event_type: [data]}``."""

    def __init__(self):
        self.seen = {}
        self.lock = threading.Lock()

    def _hear(self, event_type, payload):
        with self.lock:
            self.seen.setdefault(event_type, []).append(
                payload.get('cyquota_object.data', payload))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._hear(event_type, payload)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self._hear(event_type, payload)

    def of(self, event_type):
        with self.lock:
            return list(self.seen.get(event_type, ()))


@pytest.fixture(scope='package')
def notifications(bed):
    """``notifications(event_type)``: the data of every notification of
    that type cyquota sent on the bed so far (waiting up to 10 s for a
    first one)."""
    heard = _Heard()
    conf = cfg.ConfigOpts()
    conf([], project='cyquota-bed-listener')
    transport = oslo_messaging.get_notification_transport(
        conf, url=bed.vhost.url)
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(
            topic='notifications',
            exchange=conductor_conf.CONTROL_EXCHANGE)],
        [heard], executor='threading')
    listener.start()

    def of(event_type, timeout=10):
        deadline = time.monotonic() + timeout
        while not heard.of(event_type) and time.monotonic() < deadline:
            time.sleep(0.2)
        return heard.of(event_type)
    yield of
    listener.stop()
    listener.wait()
    transport.cleanup()
