"""cyquota's benchmarks: the ledger's rate against the raw rate of a
durable counter, the tree check's latency as trees grow, and the REST and
RPC round trips. Run them with ``python -m benchmarks``; README.rst
describes them and the interface of a benchmark module."""

import contextlib
import tempfile
import time

from cyquota.conf import CONF
from cyquota.db import api as db_api
from servers import databases as real_servers

_configured = False


def use_database(url, migrate=False):
    """Point cyquota in this process at ``url`` (and migrate it), parsing
    cyquota's configuration, without config files, on first use."""
    global _configured
    if not _configured:
        CONF([], project='cyquota', default_config_files=[])
        _configured = True
    real_servers.use_database(url, migrate=migrate)


def busy(seconds):
    """Keep this thread busy for ``seconds``: a client that paces its calls
    as a server does between the parts of a request, busy rather than
    asleep (the database idles either way)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


#: The failed row of a backend whose server cannot be reached.
UNREACHABLE = {'failed': True, 'check': 'server not reachable'}


def databases(name, backends, progress, database=None):
    """For each of ``backends`` in turn, ``(backend, url)`` with cyquota
    pointed at a throw-away database made by ``database`` (default
    ``throwaway_database``); ``url`` is None, and said, when the server
    cannot be reached. ``name``: the benchmark's, for the progress lines."""
    for backend in backends:
        progress.step('%s: %s: creating a throw-away database'
                      % (name, backend))
        with (database or throwaway_database)(backend) as url:
            if url is None:
                progress.step('%s: %s: server not reachable, skipped'
                              % (name, backend))
            yield backend, url


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
                url = real_servers.create_database(backend)
            except Exception:  # any driver error: the server is not there
                yield None
                return
            stack.callback(real_servers.drop_database, url)
        use_database(url, migrate=True)
        stack.callback(db_api.reset)
        yield url
