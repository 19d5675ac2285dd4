"""Query strings of the API's GETs: each GET's parameters are declared once
(``Parameter``, in ``cyquota.api.schemas``), read by ``values`` (known keys
only, each at most once unless repeatable, values checked before any
work) and shown by the OpenAPI document; and the ``next`` link of a full
page."""

import dataclasses
import re
import typing
import urllib.parse

import pecan

from cyquota.conf import CONF
from cyquota import exception
from cyquota.placement import request as placement_request

_PAGE_SIZE = re.compile(r'[1-9][0-9]{0,3}')
_POSITIVE = re.compile(r'[1-9][0-9]*')
MAX_PAGE_SIZE = 1000


def _invalid(detail):
    return exception.InvalidQuery(
        detail='Invalid query string parameters: %s' % detail)


def _one_of(name, value, choices):
    if value is not None and value not in choices:
        raise _invalid("'%s' must be one of %s. Got: %s"
                       % (name, ', '.join(choices), value))
    return value


@dataclasses.dataclass(frozen=True)
class Parameter:
    """A query parameter: its ``name``, the JSON ``schema`` of its value
    and its ``description`` (what the OpenAPI document shows), and
    ``read(name, value)``, which checks the value sent (None when absent;
    a list of them when ``repeated``) and returns what the controller
    uses. Without ``read``, a value in the schema's ``enum`` or any value
    is taken as sent."""

    name: str
    schema: dict = dataclasses.field(
        default_factory=lambda: {'type': 'string'})
    description: str | None = None
    read: typing.Callable | None = None
    repeated: bool = False

    def value(self, sent):
        """The value the controller uses of what was ``sent``."""
        if self.read is not None:
            return self.read(self.name, sent)
        if 'enum' in self.schema:
            return _one_of(self.name, sent, self.schema['enum'])
        return sent


def values(parameters):
    """``{name: value}`` of the request's query for ``parameters`` (a
    GET's declaration); an unknown key, or a single one repeated, is a
    400."""
    pairs = placement_request.query_pairs(pecan.request.GET)
    by_name = {parameter.name: parameter for parameter in parameters}
    placement_request.check_keys(pairs, by_name.__contains__)
    return {
        name: parameter.value(
            [value for key, value in pairs if key == name]
            if parameter.repeated
            else placement_request.single_value(pairs, name))
        for name, parameter in by_name.items()}


def page_size(name, value):
    """A page's size: 1 to MAX_PAGE_SIZE, default MAX_PAGE_SIZE."""
    if value is None:
        return MAX_PAGE_SIZE
    if not _PAGE_SIZE.fullmatch(value) or int(value) > MAX_PAGE_SIZE:
        raise _invalid("'%s' must be an integer from 1 to %d. Got: %s"
                       % (name, MAX_PAGE_SIZE, value))
    return int(value)


def clamped_page_size(name, value):
    """A page's size up to ``[api] max_limit``: a positive integer,
    lowered to max_limit as Nova does; default max_limit."""
    largest = CONF.api.max_limit
    if value is None:
        return largest
    if not _POSITIVE.fullmatch(value):
        raise _invalid("'%s' must be a positive integer. Got: %s"
                       % (name, value))
    # A value past any page is max_limit, however many digits it has.
    return largest if len(value) > 9 else min(int(value), largest)


def one_of(name, choices):
    """A parameter whose value is one of ``choices``."""
    return Parameter(name, {'type': 'string', 'enum': list(choices)})


def marker(what):
    """``marker`` of a listing paged after its item whose ``what`` (``id
    of the previous page's last lease``, say) it is."""
    return Parameter('marker', description='The %s.' % what)


PROJECT_ID = Parameter('project_id')
#: ``limit`` of a listing paged up to ``[api] max_limit``.
PAGE_LIMIT = Parameter(
    'limit', {'type': 'integer', 'minimum': 1},
    'The most items a page holds; ``[api] max_limit`` (1000 unless '
    'configured) when absent, and a larger value is lowered to it.',
    clamped_page_size)


def target(params):
    """The policy target of a listing: ``{'project_id': ...}`` when the
    query names a project, else ``{}``, which no project rule matches."""
    if params.get('project_id') is None:
        return {}
    return {'project_id': params['project_id']}


def next_links(name, params, page, page_size, key, path=None):
    """``{"<name>_links": [{"rel": "next", "href": ...}]}`` of a full
    ``page`` of ``/v1/<path>`` (default: ``name``), else ``{}``.

    The href repeats the request's query (``params``, None values left
    out) with the page's size as ``limit`` and, as ``marker``, the ``key``
    of the page's last item, as Nova's ``servers_links`` do.
    """
    if not page or len(page) < page_size:
        return {}
    query = dict(params, limit=str(page_size), marker=page[-1][key])
    return {'%s_links' % name: [{'rel': 'next', 'href': '%s/v1/%s?%s' % (
        pecan.request.application_url, path or name, urllib.parse.urlencode(
            {k: v for k, v in sorted(query.items()) if v is not None}))}]}
