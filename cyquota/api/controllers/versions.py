"""The version document of the API."""

import pecan

from cyquota.api import microversion


def version():
    """The one API version, the range of its microversions, and a link to
    it."""
    return {
        'id': 'v1',
        'status': 'CURRENT',
        'min_version': str(microversion.MIN_VERSION),
        'max_version': str(microversion.MAX_VERSION),
        'links': [{'rel': 'self',
                   'href': pecan.request.application_url + '/v1/'}],
    }
