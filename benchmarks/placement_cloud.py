"""The cloud of the ``placement`` benchmark, written twice: into a real
Placement over HTTP, as the cloud's other services write it, and into
cyquota's own device model, as an operator does in local mode.

Compute nodes (roots without inventory of a counted class) carry
:data:`DEVICES_PER_NODE` devices each, every device with inventory of four
classes (:data:`CLASSES`); three roots in four are in one of
:data:`AGGREGATES` aggregates, one device in four has a trait, one in five
is partly held by a server (another consumer, as Nova's).
"""

import concurrent.futures
import dataclasses
import uuid as uuidlib

import requests

from cyquota.placement import aggregates
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import traits

#: cyquota resource: (Placement class, total on each device).
CLASSES = {'FPGA': ('FPGA', 4), 'GPU': ('PGPU', 4),
           'CUSTOM_A': ('CUSTOM_A', 8), 'CUSTOM_B': ('CUSTOM_B', 8)}
#: ``[placement] class_map`` for :data:`CLASSES`.
CLASS_MAP = 'GPU:PGPU'
#: ``[quota] resources`` beyond the built-in FPGA and GPU.
EXTRA_RESOURCES = ['CUSTOM_A', 'CUSTOM_B']
DEVICES_PER_NODE = 10
AGGREGATES = 10
TRAIT = 'HW_GPU_API_VULKAN'
#: What a server holds of a device that has one.
SERVER_HOLDS = {'FPGA': 1, 'GPU': 1}
#: The inventory that :meth:`PlacementWriter.change_inventories` changes.
CHANGED_RESOURCE = 'CUSTOM_A'
#: Concurrent writers while building the cloud in Placement.
THREADS = 4
#: How many times a write that met another in Placement's SQLite is sent.
LOCKED_TRIES = 20
MICROVERSION = '1.39'


@dataclasses.dataclass
class Device:
    """A device: a child of its node with inventory."""

    uuid: str
    name: str
    #: ``{resource: total}``
    inventories: dict
    traits: list
    #: The consumer uuid of the server holding :data:`SERVER_HOLDS`, or
    #: None.
    server: str = None


@dataclasses.dataclass
class Node:
    """A compute node: a root provider, in ``aggregates``."""

    uuid: str
    name: str
    aggregates: list
    devices: list


@dataclasses.dataclass
class Cloud:
    """The cloud's layout."""

    nodes: list
    aggregates: list

    @property
    def devices(self):
        """Every :class:`Device`, node by node."""
        return [device for node in self.nodes for device in node.devices]

    @property
    def providers(self):
        """How many providers: nodes and devices."""
        return len(self.nodes) + len(self.devices)

    @property
    def servers(self):
        """The devices a server holds some of."""
        return [device for device in self.devices if device.server]

    def expected_full_sync(self):
        """The ``mirror.Result.rows()`` of a first sync of this cloud."""
        return {
            'providers added': self.providers, 'providers updated': 0,
            'providers removed': 0, 'providers kept (held)': 0,
            'inventory changes': len(CLASSES) * len(self.devices),
            'aggregate membership changes': sum(
                len(node.aggregates) for node in self.nodes),
            'trait changes': sum(len(d.traits) for d in self.devices),
            'usage changes': len(SERVER_HOLDS) * len(self.servers)}


def _uuid():
    return str(uuidlib.uuid4())


def layout(nodes):
    """A :class:`Cloud` of ``nodes`` compute nodes."""
    aggs = [_uuid() for _ in range(AGGREGATES)]
    made = []
    for i in range(nodes):
        name = 'bench-node-%03d' % i
        made.append(Node(_uuid(), name, [] if i % 4 == 3 else
                         [aggs[i % AGGREGATES]], [
            Device(_uuid(), '%s-dev%d' % (name, j),
                   {rc: total for rc, (_, total) in CLASSES.items()},
                   [TRAIT] if j % 4 == 0 else [],
                   _uuid() if j % 5 == 0 else None)
            for j in range(DEVICES_PER_NODE)]))
    return Cloud(made, aggs)


class PlacementWriter:
    """Writes a :class:`Cloud` to the Placement at ``url`` by plain HTTP,
    as ``token`` (an admin's)."""

    def __init__(self, url, token):
        self.url = url
        self.headers = {'X-Auth-Token': token,
                        'OpenStack-API-Version': 'placement ' + MICROVERSION}

    def _call(self, http, method, path, body=None):
        for _ in range(LOCKED_TRIES):
            response = http.request(method, self.url + path, json=body,
                                    headers=self.headers, timeout=60)
            # Placement on SQLite refuses a write that meets another.
            if 'database is locked' not in response.text:
                break
        if response.status_code not in (200, 201, 204):
            raise RuntimeError('Placement %s %s: %d %s' % (
                method, path, response.status_code, response.text[:200]))
        return response.json() if response.content else None

    def write(self, cloud, progress):
        """Create every provider, inventory, aggregate membership, trait
        and server allocation of ``cloud``, a node per task on
        :data:`THREADS` threads; ``progress(nodes done)`` now and then."""
        with requests.Session() as http:
            for rc, _ in CLASSES.values():
                if rc.startswith('CUSTOM_'):
                    self._call(http, 'PUT', '/resource_classes/' + rc)
        every = max(1, len(cloud.nodes) // 10)
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            for done, _ in enumerate(pool.map(self._node, cloud.nodes), 1):
                if done % every == 0:
                    progress(done)

    def _node(self, node):
        # A new provider's generation is 0; every write returns the next.
        with requests.Session() as http:
            self._call(http, 'POST', '/resource_providers',
                       {'uuid': node.uuid, 'name': node.name})
            if node.aggregates:
                self._call(http, 'PUT', '/resource_providers/%s/aggregates'
                           % node.uuid, {'aggregates': node.aggregates,
                                         'resource_provider_generation': 0})
            for device in node.devices:
                self._device(http, node, device)
            servers = [d for d in node.devices if d.server]
            if servers:
                self._call(http, 'POST', '/allocations', {
                    d.server: {
                        'allocations': {d.uuid: {'resources': {
                            CLASSES[rc][0]: n
                            for rc, n in SERVER_HOLDS.items()}}},
                        'project_id': 'bench-servers',
                        'user_id': 'bench-servers',
                        'consumer_generation': None,
                        'consumer_type': 'INSTANCE'}
                    for d in servers})

    def _device(self, http, node, device):
        self._call(http, 'POST', '/resource_providers', {
            'uuid': device.uuid, 'name': device.name,
            'parent_provider_uuid': node.uuid})
        generation = self._call(
            http, 'PUT', '/resource_providers/%s/inventories' % device.uuid,
            {'resource_provider_generation': 0, 'inventories': {
                CLASSES[rc][0]: {'total': total}
                for rc, total in device.inventories.items()}},
        )['resource_provider_generation']
        if device.traits:
            self._call(http, 'PUT', '/resource_providers/%s/traits'
                       % device.uuid,
                       {'traits': device.traits,
                        'resource_provider_generation': generation})

    def change_inventories(self, cloud, count):
        """Add one to the :data:`CHANGED_RESOURCE` total of ``count``
        devices spread over the cloud, in Placement and in ``cloud``."""
        devices = cloud.devices
        with requests.Session() as http:
            for device in devices[::max(1, len(devices) // count)][:count]:
                path = '/resource_providers/%s/inventories' % device.uuid
                found = self._call(http, 'GET', path)
                device.inventories[CHANGED_RESOURCE] += 1
                self._call(http, 'PUT', path, {
                    'resource_provider_generation':
                        found['resource_provider_generation'],
                    'inventories': {
                        CLASSES[rc][0]: {'total': total}
                        for rc, total in device.inventories.items()}})


def enter_locally(context, cloud):
    """The same providers (uuids, names, trees), inventories, aggregate
    memberships and traits through cyquota's device model (the servers'
    allocations have no place there: local mode has no other
    consumers)."""
    for node in cloud.nodes:
        providers.create(context, node.name, uuid=node.uuid)
        if node.aggregates:
            aggregates.set_for_provider(context, node.uuid, 0,
                                        node.aggregates)
        for device in node.devices:
            providers.create(context, device.name, uuid=device.uuid,
                             parent_provider_uuid=node.uuid)
            generation, _ = inventories.set_all(
                context, device.uuid, 0,
                {rc: {'total': total}
                 for rc, total in device.inventories.items()})
            if device.traits:
                traits.set_for_provider(context, device.uuid, generation,
                                        device.traits)
