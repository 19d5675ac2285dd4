"""Query strings of the quota, limit and lease endpoints: known keys only,
each at most once, values checked before any work; and the ``next`` link
of a full page."""

import re
import urllib.parse

import pecan

from cyquota.conf import CONF
from cyquota import exception
from cyquota.placement import request as placement_request

_PAGE_SIZE = re.compile(r'[1-9][0-9]{0,3}')
_POSITIVE = re.compile(r'[1-9][0-9]*')
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


def clamped_page_size(value):
    """``limit`` of a listing paged up to ``[api] max_limit``: a positive
    integer, lowered to max_limit as Nova does; default max_limit."""
    largest = CONF.api.max_limit
    if value is None:
        return largest
    if not _POSITIVE.fullmatch(value):
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: 'limit' must be a "
                   "positive integer. Got: %s" % value)
    # A value past any page is max_limit, however many digits it has.
    return largest if len(value) > 9 else min(int(value), largest)


def next_links(name, params, page, page_size, key):
    """``{"<name>_links": [{"rel": "next", "href": ...}]}`` of a full
    ``page`` of ``/v1/<name>``, else ``{}``.

    The href repeats the request's query (``params``, None values left
    out) with the page's size as ``limit`` and, as ``marker``, the ``key``
    of the page's last item, as Nova's ``servers_links`` do.
    """
    if not page or len(page) < page_size:
        return {}
    query = dict(params, limit=str(page_size), marker=page[-1][key])
    return {'%s_links' % name: [{'rel': 'next', 'href': '%s/v1/%s?%s' % (
        pecan.request.application_url, name, urllib.parse.urlencode(
            {k: v for k, v in sorted(query.items()) if v is not None}))}]}


def choice(name, value, choices):
    """``value`` if it is one of ``choices`` (or None), else a 400."""
    if value is not None and value not in choices:
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: '%s' must be one of "
                   "%s. Got: %s" % (name, ', '.join(choices), value))
    return value
