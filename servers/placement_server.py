"""A real Placement on 127.0.0.1 for the functional tests and benchmarks.

Placement (``openstack-placement``) comes from PyPI into its own
virtualenv, cached between runs like Keystone's
(``servers.openstack_bed.venvs``). A ``Placement`` is a temporary
directory with ``placement.conf`` (``[api] auth_strategy = noauth2``: the
token ``admin`` is an admin), a SQLite database made with
``placement-manage db sync``, and Placement's WSGI application served on a
free port of 127.0.0.1. ``Cloud`` makes providers, inventories, aggregates,
traits and allocations through plain HTTP, as the cloud's other services
would.

When the virtualenv cannot be built or Placement does not start, the tests
fail under CI (``CI=true``) and are skipped elsewhere.
"""

import contextlib
import os
import pathlib
import shutil
import subprocess
import tempfile
import textwrap
import uuid

import requests

from servers import api_server
from servers import cached_venv
from servers.cached_venv import unavailable
from servers.openstack_bed import venvs

#: The token noauth2 takes as an admin's.
TOKEN = 'admin'
MICROVERSION = '1.39'

# Placement parses its own command line at start-up; the wrapper clears
# it. It finds placement.conf through OS_PLACEMENT_CONFIG_DIR.
_SERVE = cached_venv.serve_script(
    'from placement.wsgi.api import application')


def venv():
    """The path of Placement's virtualenv, built on first use."""
    return venvs.venv('placement')


class Placement:
    """A Placement set up in a temporary directory (configuration, SQLite
    database), ready to ``start``; ``url`` is its endpoint."""

    def __init__(self):
        self.venv = venv()
        self.path = pathlib.Path(
            tempfile.mkdtemp(prefix='cyquota-placement-'))
        self.port = api_server.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.process = None
        config = self.path / 'placement.conf'
        config.write_text(textwrap.dedent('''\
            [DEFAULT]
            log_file = {home}/placement.log
            [api]
            auth_strategy = noauth2
            [placement_database]
            connection = sqlite:///{home}/placement.sqlite
            ''').format(home=self.path))
        # placement-manage does not read OS_PLACEMENT_CONFIG_DIR.
        try:
            subprocess.run(
                [str(self.venv / 'bin' / 'placement-manage'),
                 '--config-file', str(config), 'db', 'sync'],
                check=True, capture_output=True, timeout=300)
        except subprocess.SubprocessError as error:
            self.remove()
            unavailable('placement-manage db sync failed: %s %s' % (
                error, (getattr(error, 'stderr', b'') or b'').decode(
                    errors='replace')[-2000:]))

    def start(self):
        """Serve on ``url`` (the same port each time); returns when
        Placement answers."""
        serve = self.path / 'serve.py'
        serve.write_text(_SERVE)
        self.process = subprocess.Popen(
            [str(self.venv / 'bin' / 'python'), str(serve), str(self.port)],
            env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(self.path)),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cached_venv.wait_until_answering('Placement', self.process, self.url)

    def stop(self):
        """Stop serving; the database stays for the next ``start``."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stderr.close()
        self.process = None

    @contextlib.contextmanager
    def stopped(self):
        """Placement stopped for the block, started again after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


@contextlib.contextmanager
def running():
    """A started ``Placement``, stopped and removed when the block ends."""
    placement = Placement()
    try:
        placement.start()
        yield placement
    finally:
        placement.stop()
        placement.remove()


class Cloud:
    """What the cloud's other services write to a running Placement, by
    plain HTTP at :data:`MICROVERSION`: ``url`` is its endpoint, ``server``
    the :class:`Placement` (to stop it for a while)."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self.http = requests.Session()
        self.http.headers.update({
            'X-Auth-Token': TOKEN,
            'OpenStack-API-Version': 'placement %s' % MICROVERSION})

    def call(self, method, path, body=None, expect=(200, 201, 204)):
        """``method path`` with the JSON ``body``; the decoded answer
        (None when empty). Fails on a status not in ``expect``."""
        response = self.http.request(method, self.url + path, json=body,
                                     timeout=30)
        assert response.status_code in expect, (
            method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def provider(self, name=None, parent=None):
        """A new resource provider's uuid."""
        rp_uuid = str(uuid.uuid4())
        body = {'uuid': rp_uuid, 'name': name or 'rp-%s' % rp_uuid[:8]}
        if parent:
            body['parent_provider_uuid'] = parent
        self.call('POST', '/resource_providers', body)
        return rp_uuid

    def generation(self, rp_uuid):
        return self.call('GET', '/resource_providers/%s' % rp_uuid)[
            'generation']

    def inventory(self, rp_uuid, inventories):
        """Set ``{class: total}`` or ``{class: {total, ...}}``."""
        self.call('PUT', '/resource_providers/%s/inventories' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'inventories': {
                rc: inv if isinstance(inv, dict) else {'total': inv}
                for rc, inv in inventories.items()}})

    def aggregates(self, rp_uuid, aggregates):
        self.call('PUT', '/resource_providers/%s/aggregates' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'aggregates': list(aggregates)})

    def traits(self, rp_uuid, traits):
        """Set ``traits``, creating the custom ones first."""
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.call('PUT', '/traits/%s' % trait)
        self.call('PUT', '/resource_providers/%s/traits' % rp_uuid, {
            'resource_provider_generation': self.generation(rp_uuid),
            'traits': list(traits)})

    def resource_class(self, name):
        """Create the custom resource class ``name`` (if new)."""
        self.call('PUT', '/resource_classes/%s' % name)

    def allocate(self, consumer, allocations, project_id, user_id,
                 consumer_type='INSTANCE'):
        """Make ``{provider: {class: amount}}`` all that ``consumer``
        holds, as Nova does for a server."""
        current = self.call('GET', '/allocations/%s' % consumer)
        self.call('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': resources}
                            for rp, resources in allocations.items()},
            'consumer_generation': current.get('consumer_generation'),
            'project_id': project_id, 'user_id': user_id,
            'consumer_type': consumer_type})


def empty(cloud):
    """Remove every allocation and provider that earlier tests left in the
    running Placement of ``cloud`` (a :class:`Cloud`)."""
    listed = cloud.call('GET', '/resource_providers')['resource_providers']
    for rp in listed:
        held = cloud.call('GET', '/resource_providers/%s/allocations'
                          % rp['uuid'])['allocations']
        for consumer in held:
            cloud.call('DELETE', '/allocations/%s' % consumer,
                       expect=(204, 404))
    # Children before their parents.
    for rp in sorted(listed,
                     key=lambda rp: rp['parent_provider_uuid'] is None):
        cloud.call('DELETE', '/resource_providers/%s' % rp['uuid'],
                   expect=(204, 404))


def offered(cloud, resources):
    """The providers of Placement's own allocation candidates for
    ``resources`` (``"PGPU:2"``)."""
    found = cloud.call('GET', '/allocation_candidates?resources=%s'
                       % resources)
    return {rp for request in found['allocation_requests']
            for rp in request['allocations']}
