"""OpenStack services from PyPI, for functional tests that run the real
thing (Keystone, Placement, Nova, Cyborg, Blazar's filters).

Each virtualenv is built once per package and version and cached between
runs in ``~/.cache/cyquota/<package>-venv-<version>`` (``$XDG_CACHE_HOME``
is honoured); one installed with a constraints file (a frozen working set
the project keeps) is keyed by that file's hash as well, so that changing
the file builds a new one. :func:`serve_script` is the small program that
serves a service's WSGI application from its virtualenv on 127.0.0.1, and
:func:`wait_until_answering` waits for it. When a service cannot be built
or does not start, the tests fail under CI (``CI=true``) and are skipped
elsewhere.
"""

import fcntl
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
import requests


def unavailable(message):
    """Fail under CI, skip elsewhere."""
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def cache_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache')
    return pathlib.Path(base) / 'cyquota'


def venv(package, version, constraints=None, extras=()):
    """The path of ``package==version``'s virtualenv, built on first
    use; with ``constraints`` (a pip constraints file) every library is
    installed at the version it pins, ``extras`` (more distributions
    wanted beside ``package``) included."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    name = '%s-venv-%s' % (package, version)
    if constraints is not None:
        name += '-' + hashlib.sha256(
            pathlib.Path(constraints).read_bytes()).hexdigest()[:8]
    target = root / name
    with open(root / (name + '.lock'), 'w') as lock:
        # Another test run may be building it right now.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / 'complete').exists():
            _build(target, ['%s==%s' % (package, version)] + list(extras),
                   constraints)
    return target


def _build(target, requirements, constraints):
    """Build in place (a virtualenv's scripts name their interpreter by
    path); ``complete`` marks a finished build."""
    shutil.rmtree(target, ignore_errors=True)
    pip = [str(target / 'bin' / 'python'), '-m', 'pip', 'install', '--quiet']
    if constraints is not None:
        pip += ['-c', str(constraints)]
    try:
        subprocess.run([sys.executable, '-m', 'venv', str(target)],
                       check=True, capture_output=True, timeout=300)
        subprocess.run(pip + requirements, check=True, capture_output=True,
                       timeout=1800)
    except (subprocess.SubprocessError, OSError) as error:
        output = getattr(error, 'stderr', b'') or b''
        unavailable('cannot build a virtualenv of %s: %s %s' % (
            ' '.join(requirements), error,
            output.decode(errors='replace')[-2000:]))
    (target / 'complete').write_text(' '.join(requirements) + '\n')


def serve_script(application_import):
    """A Python program that serves the WSGI application that
    ``application_import`` (a statement binding ``application``) makes, on
    the 127.0.0.1 port of its first argument. The services parse their own
    command line at start-up: they see the arguments after the port."""
    return textwrap.dedent('''\
        import socketserver
        import sys
        from wsgiref import simple_server

        port = int(sys.argv[1])
        sys.argv = sys.argv[:1] + sys.argv[2:]

        %s


        class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
            daemon_threads = True


        class Quiet(simple_server.WSGIRequestHandler):
            def log_message(self, *args):
                pass


        simple_server.make_server('127.0.0.1', port, application, Server,
                                  Quiet).serve_forever()
        ''') % application_import


def wait_until_answering(name, process, url, timeout=90):
    """Return once ``GET url`` answers 200; ``unavailable`` when
    ``process`` exits first or nothing answers within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            unavailable('%s exited: %s' % (name, process.stderr.read()
                                           .decode(errors='replace')[-2000:]))
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    unavailable('%s did not answer on %s within %ds' % (name, url, timeout))
