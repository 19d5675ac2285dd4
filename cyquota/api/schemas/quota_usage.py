"""The query of ``GET /v1/quota_usages``: rows after a marker
``<project_id>:<resource>``, ``limit`` (1 to 1000) at a time."""

import re

from cyquota.api import query
from cyquota import exception
from cyquota.quota import validation

_PROJECT_ID = '[A-Za-z0-9_-]{1,64}'
_RESOURCE = '[A-Z0-9_]+'
# The project id's own form is validation's to judge, naming it.
_MARKER = re.compile(r'(?P<project_id>[^:]+):(?P<resource>%s)' % _RESOURCE)


def _marker(name, value):
    """``(project_id, resource)`` of a marker, or None."""
    if value is None:
        return None
    match = _MARKER.fullmatch(value)
    if match is None:
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: '%s' must be "
                   "<project_id>:<resource>. Got: %s" % (name, value))
    try:
        validation.project_id(match['project_id'])
    except exception.InvalidProjectId as error:
        raise exception.InvalidQuery(
            detail="Invalid query string parameters: '%s': %s"
                   % (name, error.message))
    return match['project_id'], match['resource']


GET_QUOTA_USAGES = (
    query.PROJECT_ID, query.Parameter('resource'),
    query.Parameter('limit', {
        'type': 'integer', 'minimum': 1, 'maximum': query.MAX_PAGE_SIZE,
        'default': query.MAX_PAGE_SIZE}, read=query.page_size),
    query.Parameter(
        'marker', {'type': 'string',
                   'pattern': '^%s:%s$' % (_PROJECT_ID, _RESOURCE)},
        "``<project_id>:<resource>`` of the previous page's last row.",
        _marker))
