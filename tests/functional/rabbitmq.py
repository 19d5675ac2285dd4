"""RabbitMQ for functional tests, and conductor processes on it.

Every test gets an exchange and a topic of its own on the real broker, so
runs (and tests) never see each other's messages; its queues and exchange
are deleted afterwards. When the broker cannot be reached the tests fail
under CI (CI=true) and are skipped elsewhere.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import kombu
import oslo_messaging
import pytest

from cyquota.conductor import rpc
from cyquota.conf import CONF
from cyquota import context as cyquota_context

RABBIT_URL = os.environ.get('CYQUOTA_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
# Reply and fanout queues have random names: the broker drops them when
# they have been unused this long (seconds).
_TRANSIENT_QUEUES_TTL = 60


def _amqp_url(url):
    return 'amqp://' + url.split('://', 1)[1]


@pytest.fixture(scope='session')
def rabbit_url():
    """The broker's transport URL, once it answered."""
    try:
        with kombu.Connection(_amqp_url(RABBIT_URL),
                              connect_timeout=5) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception as error:  # any client error: broker not there
        message = 'RabbitMQ at %s is not reachable: %s' % (RABBIT_URL, error)
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return RABBIT_URL


class Bus:
    """This test's corner of the broker: its exchange and topic (one name)
    and the conductors' server names used on it."""

    def __init__(self, url):
        self.url = url
        self.name = 'cyquota-test-%s' % uuid.uuid4().hex[:12]
        self.hosts = set()

    def config(self, db_url, **sections):
        """A cyquota config file's text for a process on this bus;
        ``sections``: {group: {option: value}} added or overriding."""
        groups = {'DEFAULT': {'transport_url': self.url,
                              'control_exchange': self.name},
                  'database': {'connection': db_url},
                  'conductor': {'topic': self.name},
                  'oslo_messaging_rabbit': {
                      'rabbit_transient_queues_ttl': _TRANSIENT_QUEUES_TTL}}
        for group, options in sections.items():
            groups.setdefault(group, {}).update(options)
        return ''.join('[%s]\n%s' % (group, ''.join(
            '%s = %s\n' % item for item in options.items()))
            for group, options in groups.items())

    def wait_for_server(self, host, timeout=60):
        """Wait until the conductor named ``host`` answers."""
        client = rpc.get_client(timeout=1).prepare(server=host)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return client.call(cyquota_context.get_admin_context(),
                                   'get_usage', project_id='ping')
            except oslo_messaging.MessagingTimeout:
                if time.monotonic() > deadline:
                    raise

    def delete(self):
        with kombu.Connection(_amqp_url(self.url)) as conn:
            channel = conn.channel()
            for queue in [self.name] + ['%s.%s' % (self.name, host)
                                        for host in self.hosts]:
                channel.queue_delete(queue)
            channel.exchange_delete(self.name)


@pytest.fixture
def rabbit(rabbit_url):
    """cyquota in this process pointed at the real RabbitMQ, on a topic and
    exchange of this test's own; returns the ``Bus``."""
    bus = Bus(rabbit_url)
    CONF.set_override('transport_url', bus.url)
    CONF.set_override('control_exchange', bus.name)
    CONF.set_override('topic', bus.name, 'conductor')
    rpc.reset()
    rpc.get_transport()  # registers the driver's options
    CONF.set_override('rabbit_transient_queues_ttl', _TRANSIENT_QUEUES_TTL,
                      'oslo_messaging_rabbit')
    yield bus
    rpc.reset()
    for name in ('transport_url', 'control_exchange'):
        CONF.clear_override(name)
    CONF.clear_override('topic', 'conductor')
    CONF.clear_override('rabbit_transient_queues_ttl', 'oslo_messaging_rabbit')
    bus.delete()


class ConductorProcess:
    """A ``cyquota-conductor`` process (``python -m cyquota.cmd.conductor``)
    with its config file and log file."""

    def __init__(self, bus, tmp_path, db_url, host, **sections):
        self.bus = bus
        self.host = host
        self.config = tmp_path / ('%s.conf' % host)
        self.log = tmp_path / ('%s.log' % host)
        sections = {group: dict(options)
                    for group, options in sections.items()}
        sections.setdefault('conductor', {}).setdefault('host', host)
        sections.setdefault('DEFAULT', {}).setdefault('log_file', self.log)
        self.config.write_text(bus.config(db_url, **sections))
        bus.hosts.add(host)
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'cyquota.cmd.conductor', '--config-file',
             str(self.config)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        self.bus.wait_for_server(self.host)
        return self

    def kill(self):
        """SIGKILL: no chance to finish anything."""
        self.process.kill()
        self.process.wait()

    def stop(self):
        """SIGTERM, as an operator stops it; returns the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        finally:
            self.kill()


@pytest.fixture
def conductors(rabbit, tmp_path, db_url):
    """Start conductor processes: ``conductors(host, **sections)``; any
    still running are killed at the end."""
    started = []

    def start(host, **sections):
        conductor = ConductorProcess(rabbit, tmp_path, db_url, host,
                                     **sections)
        started.append(conductor)
        return conductor.start()
    yield start
    for conductor in started:
        if conductor.process.poll() is None:
            conductor.kill()
