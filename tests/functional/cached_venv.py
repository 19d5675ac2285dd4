"""Virtualenvs of OpenStack services from PyPI, for functional tests that
run the real thing (Keystone, Blazar's filters).

Each is built once per package and version and cached between runs in
``~/.cache/cyquota/<package>-venv-<version>`` (``$XDG_CACHE_HOME`` is
honoured). When one cannot be built the tests fail under CI (``CI=true``)
and are skipped elsewhere.
"""

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys

import pytest


def unavailable(message):
    """Fail under CI, skip elsewhere."""
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def cache_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache')
    return pathlib.Path(base) / 'cyquota'


def venv(package, version):
    """The path of ``package==version``'s virtualenv, built on first
    use."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = root / ('%s-venv-%s' % (package, version))
    with open(root / ('%s-venv-%s.lock' % (package, version)), 'w') as lock:
        # Another test run may be building it right now.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / 'complete').exists():
            _build(target, package, version)
    return target


def _build(target, package, version):
    """Build in place (a virtualenv's scripts name their interpreter by
    path); ``complete`` marks a finished build."""
    shutil.rmtree(target, ignore_errors=True)
    try:
        subprocess.run([sys.executable, '-m', 'venv', str(target)],
                       check=True, capture_output=True, timeout=300)
        subprocess.run([str(target / 'bin' / 'python'), '-m', 'pip',
                        'install', '--quiet', '%s==%s' % (package, version)],
                       check=True, capture_output=True, timeout=1800)
    except (subprocess.SubprocessError, OSError) as error:
        output = getattr(error, 'stderr', b'') or b''
        unavailable('cannot build a %s %s virtualenv: %s %s' % (
            package, version, error, output.decode(errors='replace')[-2000:]))
    (target / 'complete').write_text(version + '\n')
