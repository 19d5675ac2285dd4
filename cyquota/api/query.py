"""Query strings of the quota and limit endpoints: known keys only, each
at most once, values checked before any work."""

import re

import pecan

from cyquota import exception
from cyquota.placement import request as placement_request

_PAGE_SIZE = re.compile(r'[1-9][0-9]{0,3}')
MAX_PAGE_SIZE = 1000


def params(*allowed):
    """``{key: value or None}`` of the request's query for ``allowed``
    keys; an unknown or repeated key is a 400."""
    pairs = placement_request.query_pairs(pecan.request.GET)
    placement_request.check_keys(pairs, allowed.__contains__)
    return {key: placement_request.single_value(pairs, key)
            for key in allowed}


def target(params):
    """The policy target of a listing: ``{'project_id': ...}`` when the
    query names a project, else ``{}``, which no project rule matches."""
    if params.get('project_id') is None:
        return {}
    return {'project_id': params['project_id']}


def page_size(value):
    """``limit``: 1 to MAX_PAGE_SIZE, default MAX_PAGE_SIZE."""
    if value is None:
        return MAX_PAGE_SIZE
    if not _PAGE_SIZE.fullmatch(value) or int(value) > MAX_PAGE_SIZE:
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: 'limit' must be an "
                   "integer from 1 to %d. Got: %s" % (MAX_PAGE_SIZE, value))
    return int(value)


def choice(name, value, choices):
    """``value`` if it is one of ``choices`` (or None), else a 400."""
    if value is not None and value not in choices:
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: '%s' must be one of "
                   "%s. Got: %s" % (name, ', '.join(choices), value))
    return value
