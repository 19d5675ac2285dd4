"""The lease-pool rule: lease pools kept apart from ordinary requests.

Lease pools are aggregates whose metadata has a key such as
``reservation:<id>``. With ``[placement] default_forbidden_member_prefix =
reservation:`` and ``required_member_prefix = reservation:``:

* a request that carries no member key starting with a default-forbidden
  prefix never lands on a provider that is, or whose root is, in an
  aggregate with such a metadata key (ordinary requests stay out of every
  pool);
* a request carrying the key ``reservation:<id>`` (a required prefix) lands
  only on providers that are, or whose root is, in an aggregate whose
  metadata holds that key (its own pool; none if no aggregate holds it).

A pool key is a capability: the pool aggregate's ``filter_tenant_id`` and
``filter_tenant_id_<suffix>`` metadata (Nova's AggregateMultiTenancyIsolation
keys) name the projects whose members may carry its key; a pool naming no
project is the operator's, whose key only the admin and service roles may
carry, acting for a project. The caller is a ``Carrier`` (also when it
changes a lease: its rights now, never those of the lease's creator). A
key the carrier may not carry is handled as a key no aggregate holds, so
that the answer (no devices) tells nothing of the pool, and it opens no
pool:

* a request carrying a default-forbidden key still stays out of every pool
  but those holding a key it may carry (a provider in one of those may
  also be in other pools: the operator shares it).

Nova applies the same rule before calling Placement; cyquota applies it to
``GET /v1/allocation_candidates``, to device claims and to lease devices,
on top of the request's own ``member_of``. Membership through the root
makes a pool of compute nodes cover their devices, as aggregates on a root
do in Placement.
"""

import dataclasses

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import placement_models
from cyquota.placement import aggregates

_provider_aggs = placement_models.ProviderAggregate.__table__
_metadata = placement_models.AggregateMetadata.__table__


PRIVILEGED_ROLES = frozenset(['admin', 'service'])


@dataclasses.dataclass(frozen=True)
class Carrier:
    """Who carries a request's member keys.

    :ivar project_id: the project the request is for.
    :ivar privileged: the admin or service role, which may also carry the
        operator's keys (of pools naming no project).
    """

    project_id: str = None
    privileged: bool = False

    @classmethod
    def of(cls, context, project_id=None):
        """The carrier of a request context acting for ``project_id``
        (default: the context's own project)."""
        roles = {role.lower() for role in context.roles or ()}
        return cls(project_id or context.project_id,
                   bool(context.is_admin or roles & PRIVILEGED_ROLES))

    def may_carry(self, tenants):
        """Whether the key of a pool naming ``tenants`` (a set of project
        ids, empty for the operator's pools) may be carried."""
        if tenants:
            return self.project_id in tenants
        return self.privileged


@dataclasses.dataclass(frozen=True)
class PoolRule:
    """Aggregate constraints every provider of a candidate must meet.

    :ivar required: one set of aggregate uuids per carried required key;
        the provider or its root must be in one aggregate of each set.
    :ivar forbidden: the pools (aggregate uuids) the provider and its root
        must stay out of...
    :ivar opened: ...unless one of them is in one of these, the pools
        whose key the request carries and may carry.
    """

    required: tuple = ()
    forbidden: frozenset = frozenset()
    opened: frozenset = frozenset()

    def __bool__(self):
        """Whether the rule constrains anything (else every provider is
        allowed, whatever its aggregates)."""
        return bool(self.required or self.forbidden)

    def allows(self, provider_aggregates, root_aggregates):
        both = provider_aggregates | root_aggregates
        return (all(aggs & both for aggs in self.required)
                and (not self.forbidden & both or bool(self.opened & both)))


def _prefixes(option):
    return tuple(prefix for prefix in option if prefix)


def forbidden_prefixes():
    """The prefixes of ``[placement] default_forbidden_member_prefix``:
    those of every pool's keys."""
    return _prefixes(CONF.placement.default_forbidden_member_prefix)


def _pool_key(backend, prefix):
    """SQL: an aggregate metadata key starting with ``prefix``, compared
    exactly as the rule compares it (``Spelling.exact``: MariaDB compares
    strings without case unless told)."""
    start = sa.func.substr(_metadata.c.key, 1, len(prefix))
    return backend.spelling.exact(start) == prefix


def outside_every_pool(backend, provider_id, root_id):
    """SQL: the rule of a request carrying no member key, for the
    provider ``provider_id`` of root ``root_id`` (columns of the caller's
    statement) on ``backend`` (``cyquota.db.backends``): neither is in an
    aggregate with a key of a default-forbidden prefix (every pool)."""
    prefixes = forbidden_prefixes()
    if not prefixes:
        return sa.true()
    # One lookup each: MariaDB scans the whole index for an OR of the two.
    return sa.and_(*(~sa.exists().where(
        _provider_aggs.c.resource_provider_id == member,
        _metadata.c.aggregate_id == _provider_aggs.c.aggregate_id,
        sa.or_(*(_pool_key(backend, prefix) for prefix in prefixes))
    ).correlate_except(_provider_aggs, _metadata)
        for member in (provider_id, root_id)))


def rule_for(session, member_keys, carrier):
    """The PoolRule for a request carrying ``member_keys``.

    :param carrier: the ``Carrier`` of the request; the pools whose key it
        may not carry count as not holding the key.
    """
    return _rules(session, [tuple(member_keys)], carrier)[tuple(member_keys)]


def rules_for(session, member_keys, carrier):
    """``{member key: PoolRule}`` for requests each carrying one of
    ``member_keys`` (None: no key), read at once."""
    return {key[0] if key else None: rule for key, rule in _rules(
        session, [(key,) if key else () for key in member_keys],
        carrier).items()}


def _rules(session, requests, carrier):
    """``{keys: PoolRule}`` for each of ``requests`` (tuples of the member
    keys one request carries), in two queries."""
    required_prefixes = _prefixes(CONF.placement.required_member_prefix)
    pool_prefixes = forbidden_prefixes()
    carried = {keys: sorted(key for key in keys if key.startswith(
        required_prefixes + pool_prefixes)) for keys in requests}
    every = sorted(set().union(*carried.values()))
    found = aggregates.with_metadata_key(session, keys=every,
                                         prefixes=pool_prefixes)
    tenants = aggregates.tenants_of(session, set().union(
        *(found.get(key, ()) for key in every)))
    # The pools holding each carried key that the carrier may enter.
    holding = {key: frozenset(
        agg for agg in found.get(key, ())
        if carrier.may_carry(tenants.get(agg, frozenset())))
        for key in every}
    # Every pool is forbidden to a request, but those its keys open.
    forbidden = frozenset(
        agg for key, aggs in found.items()
        if key.startswith(pool_prefixes) for agg in aggs)
    return {
        keys: PoolRule(
            tuple(holding[key] for key in mine
                  if key.startswith(required_prefixes)),
            forbidden,
            frozenset().union(*(holding[key] for key in mine
                                if key.startswith(pool_prefixes))))
        for keys, mine in carried.items()}
