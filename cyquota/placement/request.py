"""A device request: the query of ``GET /allocation_candidates``, parsed.

The query is Placement's (microversion 1.39, without traits and trees):

* ``resources=FPGA:1,CUSTOM_X:2`` and ``member_of=...``: the unnumbered
  group, whose resources may come from several providers of one tree (and
  sharing providers); its ``member_of`` holds if a provider *or its root*
  is in the aggregates;
* ``resources<S>`` / ``member_of<S>`` (``<S>`` 1 to 64 of
  ``[a-zA-Z0-9_-]``): a numbered group, satisfied by one provider that is
  itself in the aggregates;
* ``group_policy=none|isolate`` (required with two or more numbered
  groups), ``limit=N`` (1 to MAX_LIMIT);
* at most MAX_GROUPS groups;
* ``member_key=<aggregate metadata key>`` (cyquota's own, repeatable): the
  keys the request carries for the lease-pool rule (see ``pools``), as a
  flavor carries extra specs.

The same parser serves the REST API and Python callers (the ledger), so
both get the same 400 messages.
"""

import dataclasses
import re

from cyquota import exception
from cyquota.placement import device_errors
from cyquota.placement import member_of as member_of_mod
from cyquota.placement import resource_classes

MAX_AMOUNT = 2 ** 31 - 1
#: The most request groups (the unnumbered one included) a request may
#: have: the candidates of N groups are up to (devices)^N combinations.
MAX_GROUPS = 16
#: The largest ``limit``: more candidates than any search returns.
MAX_LIMIT = 2 ** 31 - 1
MEMBER_KEY = 'member_key'
GROUP_POLICIES = ('none', 'isolate')

_GROUP_KEY = re.compile(r'(resources|member_of)([a-zA-Z0-9_-]{1,64})?')
_LIMIT = re.compile(r'[1-9][0-9]*')
_ONCE = ('group_policy', 'limit')
_RESOURCES_FORM = ('Badly formed resources parameter. Expected resources '
                   'query string parameter in form: '
                   '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """Resources that one group asks for, and where they may come from.

    :ivar suffix: '' for the unnumbered group.
    :ivar resources: ``{resource_class: amount}``.
    :ivar member_of: the group's ``member_of`` constraint.
    """

    suffix: str
    resources: dict
    member_of: member_of_mod.MemberOf = member_of_mod.MemberOf()

    @property
    def use_same_provider(self):
        """Numbered groups take all their resources from one provider."""
        return bool(self.suffix)


@dataclasses.dataclass(frozen=True)
class DeviceRequest:
    """Every group of a request plus the request-wide parameters."""

    groups: tuple
    group_policy: str = None
    limit: int = None
    member_keys: frozenset = frozenset()

    def totals(self):
        """``{resource_class: amount}`` summed over all groups."""
        totals = {}
        for group in self.groups:
            for rc, amount in group.resources.items():
                totals[rc] = totals.get(rc, 0) + amount
        return totals


def _invalid(detail):
    return exception.InvalidQuery(detail=detail)


def query_pairs(params):
    """``(key, value)`` pairs of a webob MultiDict, a list of pairs, or a
    mapping whose values are strings or lists of strings; a 400 naming
    the key of a value with a NUL character."""
    if hasattr(params, 'getall'):
        pairs = list(params.items())
    elif not hasattr(params, 'items'):
        pairs = list(params)
    else:
        pairs = [(key, value) for key, values in params.items()
                 for value in (values if isinstance(values, (list, tuple))
                               else [values])]
    for pair in pairs:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(item, str) for item in pair)):
            raise _invalid('Invalid query string parameters: expected '
                           'string keys and values. Got: %r' % (pair,))
        # No id, name or class holds a NUL, and PostgreSQL refuses one in
        # any text it is sent: refused here, naming the parameter.
        if '\x00' in pair[0] or '\x00' in pair[1]:
            raise _invalid("Invalid query string parameters: '%s' must not "
                           "contain a NUL character" % pair[0].replace(
                               '\x00', '\\x00'))
    return pairs


def check_keys(pairs, allowed):
    """Refuse a key that ``allowed`` (a predicate) does not accept."""
    for key, _value in pairs:
        if not allowed(key):
            raise _invalid("Invalid query string parameters: Additional "
                           "properties are not allowed ('%s' was "
                           "unexpected)" % key)


def single_value(pairs, key):
    """The one value of ``key`` (None if absent); a 400 if repeated."""
    values = [value for name, value in pairs if name == key]
    if len(values) > 1:
        raise _invalid("Query parameter '%s' may be specified only once."
                       % key)
    return values[0] if values else None


def parse_resources(value):
    """``RC:N,RC:N`` into ``{rc: amount}`` (Placement's messages)."""
    if value.strip() == '':
        raise _invalid(_RESOURCES_FORM % 'empty string')
    result = {}
    for item in value.split(','):
        try:
            rc, amount = item.split(':')
        except ValueError:
            raise _invalid(_RESOURCES_FORM % item)
        try:
            amount = int(amount)
        except ValueError:
            raise _invalid('Requested resource %s expected positive integer '
                           'amount. Got: %s.' % (rc, amount))
        if amount < 1:
            raise _invalid('Requested resource %s requires amount >= 1. '
                           'Got: %d.' % (rc, amount))
        if amount > MAX_AMOUNT:
            raise _invalid('Requested resource %s requires amount <= %d. '
                           'Got: %d.' % (rc, MAX_AMOUNT, amount))
        try:
            resource_classes.check(rc)
        except device_errors.ResourceClassNotFound as error:
            raise _invalid('Invalid resource class in resources parameter: '
                           '%s' % error)
        result[rc] = amount
    return result


def _allowed_key(key):
    return (key in _ONCE or key == MEMBER_KEY
            or _GROUP_KEY.fullmatch(key) is not None)


def _group_policy(pairs):
    policy = single_value(pairs, 'group_policy')
    if policy is not None and policy not in GROUP_POLICIES:
        raise _invalid("Invalid query string parameters: '%s' is not one of "
                       "['none', 'isolate']" % policy)
    return policy


def _limit(pairs):
    limit = single_value(pairs, 'limit')
    if limit is None:
        return None
    if not _LIMIT.fullmatch(limit):
        raise _invalid("Invalid query string parameters: '%s' does not "
                       "match '^[1-9][0-9]*$'" % limit)
    # Compared as text first: int() refuses a string of over 4300 digits.
    if len(limit) > len(str(MAX_LIMIT)) or int(limit) > MAX_LIMIT:
        raise _invalid("Invalid query string parameters: 'limit' must be "
                       "at most %d. Got: %s" % (MAX_LIMIT, limit))
    return int(limit)


def member_keys(pairs):
    """The ``member_key`` values: aggregate metadata keys, 1-255 chars."""
    keys = [value for key, value in pairs if key == MEMBER_KEY]
    for key in keys:
        if not 0 < len(key) <= 255:
            raise _invalid("Invalid query string parameters: Expected "
                           "'member_key' parameter to be an aggregate "
                           "metadata key of 1 to 255 characters. Got: %s"
                           % key)
    return frozenset(keys)


def from_params(params):
    """Parse a device request from query parameters.

    :param params: a webob MultiDict (``request.GET``), a list of ``(key,
        value)`` pairs, or a mapping of keys to strings or lists of strings,
        e.g. ``{'resources1': 'FPGA:1', 'resources2': 'FPGA:1',
        'group_policy': 'isolate', 'member_of1': ['in:A,B', '!C']}``.
    :returns: a DeviceRequest.
    :raises InvalidQuery: (400) with Placement's message for bad input.
    """
    pairs = query_pairs(params)
    check_keys(pairs, _allowed_key)
    group_policy = _group_policy(pairs)
    limit = _limit(pairs)
    keys = member_keys(pairs)

    resources = {}
    member_of = {}
    for key, _value in pairs:
        match = _GROUP_KEY.fullmatch(key)
        if match is None:
            continue
        kind, suffix = match.group(1), match.group(2) or ''
        if kind == 'resources' and suffix not in resources:
            resources[suffix] = parse_resources(single_value(pairs, key))
        elif kind == 'member_of' and suffix not in member_of:
            member_of[suffix] = member_of_mod.parse(
                [value for name, value in pairs if name == key])

    orphans = sorted('member_of' + suffix for suffix, value
                     in member_of.items()
                     if value and suffix not in resources)
    if orphans:
        raise _invalid('All member_of parameters must be associated with '
                       'resources. Found the following orphaned member_of '
                       'keys: %s' % ', '.join(orphans))
    if not resources:
        raise _invalid('At least one request group (`resources` or '
                       '`resources{$S}`) is required.')
    if len(resources) > MAX_GROUPS:
        past = sorted(resources)[MAX_GROUPS:]
        raise _invalid('A request may have at most %d request groups; '
                       'these are past the cap: %s' % (MAX_GROUPS, ', '.join(
                           'resources' + suffix for suffix in past)))
    if group_policy is None and sum(1 for suffix in resources if suffix) > 1:
        raise _invalid('The "group_policy" parameter is required when '
                       'specifying more than one "resources{N}" parameter.')

    groups = tuple(
        RequestGroup(suffix, resources[suffix],
                     member_of.get(suffix, member_of_mod.MemberOf()))
        for suffix in sorted(resources))
    return DeviceRequest(groups, group_policy, limit, keys)
