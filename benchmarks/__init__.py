"""cyquota's benchmarks (SPEC section 6): run them with ``python -m
benchmarks``; README.rst describes the interface of a benchmark module."""

import contextlib
import tempfile

from cyquota.conf import CONF
from cyquota.db import api as db_api
from tests import fixtures

_configured = False


def use_database(url, migrate=False):
    """Point cyquota in this process at ``url`` (and migrate it), parsing
    cyquota's configuration, without config files, on first use."""
    global _configured
    if not _configured:
        CONF([], project='cyquota', default_config_files=[])
        _configured = True
    fixtures.use_database(url, migrate=migrate)


@contextlib.contextmanager
def throwaway_database(backend):
    """A migrated throw-away database of ``backend`` (``sqlite``: a file),
    with cyquota pointed at it; None when the server cannot be reached.
    Dropped afterwards."""
    with contextlib.ExitStack() as stack:
        if backend == 'sqlite':
            directory = stack.enter_context(
                tempfile.TemporaryDirectory(prefix='cyquota-bench-'))
            url = 'sqlite:///%s/cyquota.sqlite' % directory
        else:
            try:
                url = fixtures.create_database(backend)
            except Exception:  # any driver error: the server is not there
                yield None
                return
            stack.callback(fixtures.drop_database, url)
        use_database(url, migrate=True)
        stack.callback(db_api.reset)
        yield url
