"""Who calls the REST API in the functional tests (their noauth headers),
and when their leases start."""

import datetime

#: The cloud's admin.
ADMIN = {'X-Project-Id': 'ops', 'X-User-Id': 'admin', 'X-Roles': 'admin'}
#: A start on the hour, two hours ahead: still ahead while the test runs.
START = (datetime.datetime.now(datetime.timezone.utc).replace(
    minute=0, second=0, microsecond=0) + datetime.timedelta(hours=2))


def member(project):
    """A member (and reader) of ``project``."""
    return {'X-Project-Id': project, 'X-User-Id': 'u-' + project,
            'X-Roles': 'member,reader'}
