"""The ``member_of`` query parameter as Placement reads it (1.32+).

Each value is one of:

* ``U``: the provider must be in aggregate U;
* ``in:U1,U2``: in at least one of U1, U2;
* ``!U``: must not be in U;
* ``!in:U1,U2``: in none of U1, U2 (the same as ``!U1`` and ``!U2``).

Repeated values AND together. ``!`` inside ``in:`` is refused (its element
is not a UUID), as is a comma list without a prefix. Aggregate UUIDs are
accepted in every form ``oslo_utils.uuidutils.is_uuid_like`` accepts and
kept in canonical form (lower case, hyphenated), the form aggregates are
stored in, so ``member_of`` matches however the caller spelled the UUID.
"""

import dataclasses
import uuid

from oslo_utils import uuidutils

from cyquota import exception

_IN = 'in:'
_NOT = '!'
_NOT_IN = '!in:'


@dataclasses.dataclass(frozen=True)
class MemberOf:
    """Parsed ``member_of`` values of one request group.

    :ivar required: aggregate UUID sets, ANDed; within a set, ORed.
    :ivar forbidden: aggregate UUIDs the provider must be in none of.
    """

    required: tuple = ()
    forbidden: frozenset = frozenset()

    def __bool__(self):
        return bool(self.required or self.forbidden)

    def to_params(self):
        """The query values that parse back to this object."""
        values = [_format(_IN, aggs) for aggs in self.required]
        if self.forbidden:
            values.append(_format(_NOT_IN, self.forbidden, single=_NOT))
        return values

    def required_by(self, aggregates):
        """Whether a provider directly in ``aggregates`` (a set of aggregate
        UUIDs) meets every required set (true when nothing is required)."""
        return all(aggs & aggregates for aggs in self.required)

    def forbids(self, aggregates):
        """Whether a provider directly in ``aggregates`` is in a forbidden
        aggregate."""
        return bool(self.forbidden & aggregates)


def _format(prefix, aggs, single=''):
    aggs = sorted(aggs)
    if len(aggs) == 1:
        return single + aggs[0]
    return prefix + ','.join(aggs)


def canonical_uuid(value, param='member_of'):
    """``value`` as a canonical UUID string, or a 400 naming ``param``."""
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise exception.InvalidMemberOf(detail=(
            "Invalid query string parameters: Expected '%s' parameter to "
            "contain valid UUID(s). Got: %s" % (param, value)))
    return str(uuid.UUID(value))


def parse_value(value):
    """Parse one ``member_of`` value into ``(required, forbidden)`` sets.

    :raises InvalidMemberOf: (400) with Placement's message.
    """
    if ',' in value and not value.startswith((_IN, _NOT_IN)):
        raise exception.InvalidMemberOf(detail=(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % value))
    if value.startswith(_NOT_IN):
        required, forbidden = (), value[len(_NOT_IN):].split(',')
    elif value.startswith(_NOT):
        required, forbidden = (), [value[len(_NOT):]]
    elif value.startswith(_IN):
        required, forbidden = value[len(_IN):].split(','), ()
    else:
        required, forbidden = [value], ()
    return (frozenset(canonical_uuid(agg) for agg in required),
            frozenset(canonical_uuid(agg) for agg in forbidden))


def parse(values):
    """Parse every ``member_of`` value of one group into a MemberOf.

    The same aggregate both required and forbidden is not an error: such a
    request matches nothing.
    """
    required = []
    forbidden = frozenset()
    for value in values:
        wanted, unwanted = parse_value(value)
        if wanted:
            required.append(wanted)
        forbidden |= unwanted
    return MemberOf(tuple(required), forbidden)
