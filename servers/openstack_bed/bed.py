"""``Bed``: the whole OpenStack test bed, started phase by phase and torn
down leaving nothing (processes, databases, vhost, files)."""

import concurrent.futures
import pathlib
import shutil
import sys
import tempfile
import time
import uuid

from servers import api_server
from servers.openstack_bed import cloud
from servers.openstack_bed import cyborg
from servers.openstack_bed import cyquota_services
from servers.openstack_bed import identity
from servers.openstack_bed import nova
from servers.openstack_bed import placement
from servers.openstack_bed import processes
from servers.openstack_bed import resources
from servers.openstack_bed import stand_ins
from servers.openstack_bed import venvs

#: Keystone's default limits for Nova: ``servers`` is required (Nova
#: refuses every boot without it), the others keep oslo.limit from looking
#: for them (and logging an ERROR) at each boot. No ``class:FPGA``.
NOVA_REGISTERED_LIMITS = {'servers': 1000, 'class:VCPU': 100000,
                          'class:MEMORY_MB': 10 ** 8, 'class:DISK_GB': 10 ** 6}


def _progress(line):
    # The real stderr: pytest captures sys.stderr, not this.
    sys.__stderr__.write('openstack bed: %s\n' % line)
    sys.__stderr__.flush()


class Bed(cloud.Cloud):
    """Keystone, Placement, Nova, Cyborg, Glance and Neutron stand-ins and
    cyquota on 127.0.0.1.

    :param computes: how many compute hosts (``compute1``, ...), each with
        a nova-compute and a cyborg-agent (16 fake FPGAs).
    :param cyquota_filter: cyquota's bind filter in Cyborg's pipeline.
    :param ledger: cyquota's database, ``postgresql`` or ``mysql``.
    :param nova_conf, cyborg_conf, cyquota_conf, placement_conf: more
        ``{section: {option: value}}`` for that service's configuration.
    """

    def __init__(self, computes=1, cyquota_filter=False, ledger='postgresql',
                 nova_conf=None, cyborg_conf=None, cyquota_conf=None,
                 placement_conf=None):
        self.computes = computes
        self.cyquota_filter = cyquota_filter
        self.ledger = ledger
        self.conf = {'nova': nova_conf, 'cyborg': cyborg_conf,
                     'cyquota': cyquota_conf, 'placement': placement_conf}
        self.hosts = ['compute%d' % n for n in range(1, computes + 1)]
        self.suffix = uuid.uuid4().hex[:8]
        self.home = None
        self.procs = None
        self.databases = resources.Databases(self.suffix)
        self.vhost = resources.Vhost(self.suffix)
        self.ledger_url = None
        self.stand_ins = []
        #: ``{service type: URL}`` of every service.
        self.urls = {}
        self.keystone = self.placement = self.nova = None
        self.cyborg = self.cyquota = None
        self._started = None
        #: ``[(phase, seconds since the start)]`` of the last start.
        self.phases = []
        super().__init__()

    # -- start -------------------------------------------------------------

    def _phase(self, name):
        elapsed = time.monotonic() - self._started
        self.phases.append((name, elapsed))
        _progress('%s (%.0f s)' % (name, elapsed))

    def start(self):
        """Start everything; returns the bed. Fails under CI and skips
        elsewhere when a part cannot start (``unavailable``), having torn
        down what was started."""
        self._started = time.monotonic()
        self.phases = []
        try:
            venv = venvs.all_venvs()
            self._phase('virtualenvs ready')
            self._configure(venv)
            self._phase('configured in %s' % self.home)
            self._start_services()
            self._start_hosts()
        except BaseException:  # pytest's skip and fail are BaseException
            self.stop()
            raise
        self._phase('ready')
        return self

    def _configure(self, venv):
        """The bed's directory, vhost, databases, ports, stand-ins and
        the services' configuration; ``venv``: ``{service: path}``."""
        self.home = pathlib.Path(tempfile.mkdtemp(prefix='cyquota-bed-'))
        self.procs = processes.Processes(self.home)
        self.vhost.create()
        self.ledger_url = self.databases.create('cyquota', self.ledger)
        ports = {name: api_server.free_port() for name in (
            'identity', 'placement', 'compute', 'accelerator', 'image',
            'network', 'accelerator-quota')}
        for answer, kind in ((stand_ins.glance, 'image'),
                             (stand_ins.neutron, 'network')):
            self.stand_ins.append(stand_ins.StandIn(answer, ports[kind]))
            self.urls[kind] = self.stand_ins[-1].url
        db = {name: self.databases.create(name) for name in (
            'keystone', 'placement', 'nova_api', 'nova_cell0', 'nova_cell1',
            'cyborg')}
        self.keystone = identity.Keystone(
            self.home, self.procs, venv['keystone'], db['keystone'],
            ports['identity'])
        keystone = self.urls['identity'] = self.keystone.url
        self.placement = placement.Placement(
            self.home, self.procs, venv['placement'], ports['placement'],
            keystone, db['placement'], self.conf['placement'])
        self.nova = nova.Nova(
            self.home, self.procs, venv['nova'], ports['compute'],
            {'keystone': keystone, 'glance': self.urls['image'],
             'neutron': self.urls['network']},
            {'api': db['nova_api'], 'cell0': db['nova_cell0'],
             'cell1': db['nova_cell1']}, self.vhost.url, self.conf['nova'])
        self.nova.write_config()
        self.cyquota = cyquota_services.Cyquota(
            self.home, self.procs, ports['accelerator-quota'], keystone,
            self.ledger_url, self.vhost.url, self.cyquota_filter,
            self.conf['cyquota'])
        self.cyborg = cyborg.Cyborg(
            self.home, self.procs, venv['cyborg'], ports['accelerator'],
            keystone, db['cyborg'], self.vhost.url,
            self.cyquota.url if self.cyquota_filter else None,
            self.conf['cyborg'])
        self.urls.update({'placement': self.placement.url,
                          'compute': self.nova.url,
                          'accelerator': self.cyborg.url,
                          'accelerator-quota': self.cyquota.url})

    def _start_services(self):
        """Keystone's accounts, every database's schema, then the
        services with an API and their conductors and scheduler."""
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            syncs = [pool.submit(sync) for sync in (
                self.nova.sync_databases, self.placement.sync_database,
                self.cyborg.sync_database, self.cyquota.sync_database)]
            # Here: Keystone dies with the thread that starts it.
            self._set_up_keystone()
            for sync in syncs:
                sync.result()
        self._phase('Keystone set up, databases synced')

        compute_endpoint = self.keystone.ids['endpoint:compute']
        self.nova.write_config(compute_endpoint)
        self.cyquota.write_config(compute_endpoint)
        self.placement.start()
        self.nova.start_controllers()
        self.cyborg.start_controllers()
        self.cyquota.start()
        self.placement.wait()
        self.nova.wait_for_api()
        self.cyborg.wait_for_api()
        self.cyquota.wait()
        self._phase('APIs answering')

    def _start_hosts(self):
        """nova-compute, then cyborg-agent of each host (its device
        goes under the compute's provider)."""
        compute_endpoint = self.keystone.ids['endpoint:compute']
        for host in self.hosts:
            self.nova.start_compute(host, compute_endpoint)
        for host in self.hosts:
            self.wait('the provider of %s in Placement' % host,
                      lambda: self.provider(host), 180)
        self.nova.discover_hosts()
        self._phase('computes reported')

        for host in self.hosts:
            self.cyborg.start_agent(host)
        for host in self.hosts:
            self.wait('the fake device of %s in Placement' % host,
                      lambda: self.device_provider(host), 120)
        self._phase('accelerators reported')

    def _set_up_keystone(self):
        self.keystone.set_up()
        self.keystone.start()
        self.keystone.wait()
        self.keystone.create_accounts({
            service_type: (name, self.urls[service_type])
            # Keystone's bootstrap made its own.
            for service_type, name in (
                ('placement', 'placement'),
                ('compute', 'nova'), ('accelerator', 'cyborg'),
                ('image', 'glance'), ('network', 'neutron'),
                (cyquota_services.SERVICE_TYPE, 'cyquota'))})
        self.keystone.registered_limits('compute', NOVA_REGISTERED_LIMITS)

    def _alive(self):
        return [lambda name=name: self.procs.check(name)
                for name in list(self.procs.running)]

    # -- while running -----------------------------------------------------

    def restart_cyquota(self, **sections):
        """Restart cyquota-api and cyquota-conductor with ``sections``
        (``section={option: value}``) added to their configuration, e.g.
        ``restart_cyquota(quota={'limit_source': 'keystone'})``."""
        self.cyquota.restart(sections)

    def rss_bytes(self):
        """The resident memory of all the bed's processes."""
        return self.procs.rss_bytes()

    def rss_by_process(self):
        """``{process name: bytes}``: the resident memory of each of the
        bed's processes."""
        return self.procs.rss_by_name()

    def log(self, name):
        """The output of process ``name`` (``nova-compute-compute1``,
        ``cyborg-api``, ``cyquota-api``, ...)."""
        return self.procs.log_path(name).read_text(errors='replace')

    # -- stop --------------------------------------------------------------

    def stop(self):
        """Kill every process and remove every database, the vhost and
        the bed's directory; safe to call on a partly started bed."""
        if self.procs is not None:
            self.procs.stop_all()
        for stand_in in self.stand_ins:
            stand_in.stop()
        self.stand_ins = []
        self.databases.drop_all()
        self.vhost.delete()
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
