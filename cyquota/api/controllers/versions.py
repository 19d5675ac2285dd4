"""The version document of the API."""

import pecan


def version():
    """The one API version, with a link to it."""
    return {
        'id': 'v1',
        'status': 'CURRENT',
        'min_version': '1.0',
        'max_version': '1.0',
        'links': [{'rel': 'self',
                   'href': pecan.request.application_url + '/v1/'}],
    }
