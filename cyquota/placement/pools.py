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

Nova applies the same rule before calling Placement; cyquota applies it to
``GET /v1/allocation_candidates`` and to device claims, on top of the
request's own ``member_of``. Membership through the root makes a pool of
compute nodes cover their devices, as aggregates on a root do in Placement.
"""

import dataclasses

from cyquota.conf import CONF
from cyquota.placement import aggregates


@dataclasses.dataclass(frozen=True)
class PoolRule:
    """Aggregate constraints every provider of a candidate must meet.

    :ivar required: one set of aggregate uuids per carried required key;
        the provider or its root must be in one aggregate of each set.
    :ivar forbidden: aggregate uuids neither the provider nor its root may
        be in.
    """

    required: tuple = ()
    forbidden: frozenset = frozenset()

    def allows(self, provider_aggregates, root_aggregates):
        both = provider_aggregates | root_aggregates
        return (all(aggs & both for aggs in self.required)
                and not self.forbidden & both)


def _prefixes(option):
    return tuple(prefix for prefix in option if prefix)


def rule_for(session, member_keys):
    """The PoolRule for a request carrying ``member_keys``."""
    required_prefixes = _prefixes(CONF.placement.required_member_prefix)
    forbidden_prefixes = _prefixes(
        CONF.placement.default_forbidden_member_prefix)
    required_keys = sorted(key for key in member_keys
                           if key.startswith(required_prefixes))
    carries_pool_key = any(key.startswith(forbidden_prefixes)
                           for key in member_keys)
    lookup_prefixes = () if carries_pool_key else forbidden_prefixes
    found = aggregates.with_metadata_key(session, keys=required_keys,
                                         prefixes=lookup_prefixes)
    required = tuple(frozenset(found.get(key, ())) for key in required_keys)
    forbidden = frozenset(
        agg for key, aggs in found.items()
        if key.startswith(lookup_prefixes) for agg in aggs)
    return PoolRule(required, forbidden)
