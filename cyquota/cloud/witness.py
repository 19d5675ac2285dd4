"""The cloud's Placement as the witness of the ledger's counts.

Where Nova and Cyborg allocate accelerators in Placement, Placement counts
what every consumer (an instance: the same id as the ledger's consumer)
holds, and the ledger what each project uses: the two should agree.
``cyquota-manage quota check --against-placement`` compares them
(:func:`check`); ``quota sync --from-placement`` makes the ledger's
consumers hold what Placement's do (:meth:`Witness.holdings`, adopted by
``QuotaEngine.repair``).

Per project and resource (a resource's Placement class from ``[placement]
class_map``), what is compared:

* ``used``: the ledger's ``used - leased`` (an active lease's devices are
  in both ``used`` and ``leased``, held by the lease as a consumer of its
  own) with Placement's ``GET /usages?project_id=`` summed over every
  consumer type but ``CYQUOTA_LEASE`` (``placement_client.
  LEASE_CONSUMER_TYPE``: instances, migrations, ...);
* ``leased``, when leases are written to Placement: the ledger's
  ``leased`` with the ``CYQUOTA_LEASE`` group.

Which projects: the one given, or every project the ledger counts anything
for and every project of a consumer holding a mapped class on some
provider. Placement has no list of consumers: they are found on the
providers, one request each; the check then asks one request per consumer
the ledger does not know and one per project, the sync one per consumer
found. Nothing here writes to Placement.
"""

import dataclasses

from keystoneauth1 import exceptions as ks_exceptions

from cyquota.cloud import mirror_read
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors
from cyquota.conf import CONF
from cyquota.conf import validation

#: The two figures compared: ordinary use, and what leases hold.
USED = 'used'
LEASED = 'leased'

_LEASE = placement_client.LEASE_CONSUMER_TYPE


class Unusable(Exception):
    """The ``[placement]`` options cannot make a client of Placement; the
    message is one line that names the option."""


@dataclasses.dataclass(frozen=True)
class Difference:
    """A figure of the ledger that Placement does not confirm."""

    project_id: str
    resource: str
    #: :data:`USED` or :data:`LEASED`.
    field: str
    ledger: int
    placement: int

    @property
    def difference(self):
        """What Placement counts more than the ledger (negative: less)."""
        return self.placement - self.ledger


@dataclasses.dataclass(frozen=True)
class Consumer:
    """One of Placement's consumers: its project, its consumer type and
    ``{resource: amount}`` of the mapped classes it holds."""

    project_id: str
    consumer_type: str
    held: dict


def held_of(allocations, mapped):
    """``{resource: amount}`` of Placement allocations (``{provider:
    {"resources": {class: amount}}}``) in mapped classes (``{class:
    resource}``), summed over the providers."""
    held = {}
    for allocation in allocations.values():
        for rc, amount in allocation['resources'].items():
            if rc in mapped and amount:
                held[mapped[rc]] = held.get(mapped[rc], 0) + int(amount)
    return held


def counts_of(usages, mapped):
    """``{resource: {USED: n, LEASED: n}}`` of a ``GET /usages`` answer
    (``{consumer_type: {"consumer_count": n, class: amount}}``)."""
    counts = {}
    for consumer_type, usage in usages.items():
        field = LEASED if consumer_type == _LEASE else USED
        for rc, amount in usage.items():
            if rc in mapped and amount:
                figures = counts.setdefault(mapped[rc], {USED: 0, LEASED: 0})
                figures[field] += int(amount)
    return counts


def compare(ledger, placement, leases=False):
    """The differences, in (project, resource, field) order.

    :param ledger: ``{(project_id, resource): {"used": n, "leased": n}}``,
        the ledger's counts (``QuotaEngine.usage_counts``).
    :param placement: ``{(project_id, resource): {USED: n, LEASED: n}}``,
        Placement's (:func:`counts_of`), of the same projects.
    :param leases: compare ``leased`` too (leases are written to
        Placement).
    """
    fields = (USED, LEASED) if leases else (USED,)
    found = []
    for key in sorted(set(ledger) | set(placement)):
        counts = ledger.get(key, {})
        leased = counts.get('leased', 0)
        own = {USED: counts.get('used', 0) - leased, LEASED: leased}
        theirs = placement.get(key, {})
        for field in fields:
            if own[field] != theirs.get(field, 0):
                found.append(Difference(key[0], key[1], field, own[field],
                                        theirs.get(field, 0)))
    return found


class Witness:
    """Placement's figures, read through one client.

    :param client: a ``PlacementClient``.
    :param mapped: ``{placement class: cyquota resource}``.
    :param progress: ``progress(what, done, total)``, called after each
        request of a long read (``what``: ``providers``, ``consumers``,
        ``projects``).
    """

    def __init__(self, client, mapped, progress=None):
        self.client = client
        self.mapped = mapped
        self._progress = progress or (lambda what, done, total: None)

    @classmethod
    def from_conf(cls, conf=None, progress=None):
        """A witness reaching Placement with ``conf``'s ``[placement]``
        options (cyquota's ``CONF`` when None), whatever ``source`` is.

        :raises Unusable: the options cannot make a client.
        """
        conf = CONF if conf is None else conf
        try:
            validation.check_placement(conf)
            mapped = mirror_read.mapped_classes(conf)
            client = placement_client.PlacementClient(conf)
        except validation.InvalidOption as error:
            raise Unusable(str(error))
        except (ks_exceptions.ClientException, TypeError,
                ValueError) as error:
            raise Unusable('[placement] auth_type %s: %s' % (
                conf.placement.auth_type, placement_errors.one_line(error)))
        return cls(client, mapped, progress)

    def consumer_ids(self):
        """The ids of the consumers that hold a mapped class on some
        provider: one request per provider."""
        providers = self.client.resource_providers()
        found = set()
        for done, provider in enumerate(providers, 1):
            try:
                allocations = self.client.provider_allocations(
                    provider['uuid'])['allocations']
            except placement_errors.PlacementNotFound:
                allocations = {}  # deleted since it was listed
            found.update(consumer for consumer, allocation
                         in allocations.items()
                         if held_of({provider['uuid']: allocation},
                                    self.mapped))
            self._progress('providers', done, len(providers))
        return found

    def consumer(self, consumer_id):
        """The :class:`Consumer` of that id; None when it holds nothing
        (any more)."""
        found = self.client.consumer_allocations(consumer_id)
        if not found['allocations']:
            return None
        return Consumer(found['project_id'], found.get('consumer_type'),
                        held_of(found['allocations'], self.mapped))

    def _read_consumers(self, consumer_ids):
        """The :class:`Consumer` of each id that still holds something."""
        consumer_ids = sorted(consumer_ids)
        found = {}
        for done, consumer_id in enumerate(consumer_ids, 1):
            consumer = self.consumer(consumer_id)
            if consumer is not None:
                found[consumer_id] = consumer
            self._progress('consumers', done, len(consumer_ids))
        return found

    def projects(self, known):
        """The projects of the consumers that hold a mapped class.

        :param known: ``known(consumer_ids)`` gives ``{consumer_id:
            project_id}`` of those the ledger knows; Placement is asked
            about the others.
        """
        found = self.consumer_ids()
        ledger = known(found)
        others = self._read_consumers(found - set(ledger))
        return (set(ledger.values())
                | {consumer.project_id for consumer in others.values()})

    def usage(self, project_ids):
        """``{(project_id, resource): {USED: n, LEASED: n}}``: one
        ``GET /usages`` per project."""
        project_ids = sorted(project_ids)
        usage = {}
        for done, project_id in enumerate(project_ids, 1):
            for resource, counts in counts_of(
                    self.client.project_usages(project_id),
                    self.mapped).items():
                usage[(project_id, resource)] = counts
            self._progress('projects', done, len(project_ids))
        return usage

    def holdings(self, project_id=None):
        """``{project_id: {(resource, consumer_id): amount}}``: what each
        consumer of Placement holds, but leases (only ``project_id``'s
        when given), as ``QuotaEngine.repair(placement=...)`` adopts it."""
        holdings = {} if project_id is None else {project_id: {}}
        for consumer_id, consumer in self._read_consumers(
                self.consumer_ids()).items():
            if (consumer.consumer_type == _LEASE
                    or project_id not in (None, consumer.project_id)):
                continue
            held = holdings.setdefault(consumer.project_id, {})
            for resource, amount in consumer.held.items():
                held[(resource, consumer_id)] = amount
        return holdings


def check(context, engine, reader, project_id=None, leases=False):
    """The :class:`Difference` list of the ledger (``engine``, a
    ``QuotaEngine``) and Placement (``reader``, a :class:`Witness`), for
    ``project_id`` or every project either counts anything for.

    :raises cyquota.cloud.placement_errors.PlacementError: Placement did
        not answer as it should.
    """
    ledger = engine.usage_counts(context, project_id)
    if project_id is not None:
        projects = {project_id}
    else:
        projects = {project for project, _ in ledger} | reader.projects(
            lambda ids: engine.consumer_projects(context, ids))
    return compare(ledger, reader.usage(projects), leases)
