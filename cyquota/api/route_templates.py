"""Route templates for the latency histogram: a request path matched
against the paths of the API's OpenAPI document, so that
``/v1/quota_usages/demo`` counts as ``/v1/quota_usages/{project_id}`` and
the number of series stays bounded."""

import functools
import re

from cyquota.api.controllers.v1 import openapi

#: What a path no template matches counts as.
UNMATCHED = 'unmatched'
#: Paths served beside the API.
OPERATIONS = ('/healthcheck', '/metrics')


@functools.cache
def _templates():
    """``[(compiled pattern, template)]`` of every documented path, those
    with fewer parameters first (``/v1/limits/model`` before a template
    that a parameter would let match it)."""
    result = []
    for template in sorted(list(openapi.document()['paths'])
                           + list(OPERATIONS),
                           key=lambda template: template.count('{')):
        pattern = re.sub(r'\\\{[^/]+?\\\}', '[^/]+', re.escape(template))
        result.append((re.compile(pattern + r'\Z'), template))
    return result


def template_of(path):
    """The route template ``path`` matches, or ``UNMATCHED``."""
    for pattern, template in _templates():
        if pattern.match(path):
            return template
    return UNMATCHED
