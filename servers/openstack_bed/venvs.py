"""The OpenStack services' virtualenvs, one per service, from PyPI.

Each is installed with the frozen constraints file the project keeps for
that package and version (``constraints/<package>-<version>.txt``): with
no upper-constraints reachable, pip would otherwise resolve the newest
libraries of the day, which these releases were never tested with. The
virtualenvs are cached by ``servers.cached_venv`` under a key
holding the constraints file's hash, and built in parallel on a fresh
machine (1 to 4 minutes each).

To refresh a constraints file: build the virtualenv without one, check
that the bed works, then ``pip freeze --all`` it (without pip, setuptools
and wheel) into the file.
"""

import concurrent.futures
import os
import pathlib

from servers import cached_venv

CONSTRAINTS = pathlib.Path(__file__).parent / 'constraints'

#: Beside each service: its database driver, and the memcache client that
#: keystonemiddleware imports for its token cache.
_EXTRAS = ('PyMySQL', 'python-memcached')

#: service name -> (PyPI package, version); a version can be chosen through
#: the environment (a version without a constraints file installs
#: unconstrained).
SERVICES = {
    'keystone': ('keystone', os.environ.get(
        'CYQUOTA_TEST_KEYSTONE_VERSION', '30.0.0')),
    'placement': ('openstack-placement', os.environ.get(
        'CYQUOTA_TEST_PLACEMENT_VERSION', '16.0.0')),
    'nova': ('nova', os.environ.get('CYQUOTA_TEST_NOVA_VERSION', '34.0.0')),
    'cyborg': ('openstack-cyborg', os.environ.get(
        'CYQUOTA_TEST_CYBORG_VERSION', '17.0.0')),
}


def constraints_file(service):
    """The constraints file of ``service``'s package and version, or None
    when the project keeps none for that version."""
    package, version = SERVICES[service]
    path = CONSTRAINTS / ('%s-%s.txt' % (package, version))
    return path if path.exists() else None


def venv(service):
    """The path of ``service``'s virtualenv, built on first use."""
    package, version = SERVICES[service]
    return cached_venv.venv(package, version, constraints_file(service),
                            _EXTRAS)


def all_venvs(services=tuple(SERVICES)):
    """``{service: virtualenv path}``, the missing ones built at once."""
    with concurrent.futures.ThreadPoolExecutor(len(services)) as pool:
        built = {service: pool.submit(venv, service)
                 for service in services}
        return {service: future.result() for service, future in built.items()}
