"""A ``cyquota-api`` process on 127.0.0.1, started and stopped as an
operator would, and what starting any local server takes: a free port,
the commands of this virtualenv, a wait until it answers."""

import configparser
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests

BIN = pathlib.Path(sys.executable).parent


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_until_serving(url, process, timeout=60):
    """Return once ``GET {url}/`` answers; RuntimeError when ``process``
    exits first or nothing answers within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError('the service exited with %d'
                               % process.returncode)
        try:
            if requests.get(url + '/', timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError('nothing answered on %s within %d s' % (url, timeout))


class ApiServer:
    """``cyquota-api --config-file <its own>`` on 127.0.0.1: a
    configuration file of its own, a free port, its log in a file; started
    and stopped as an operator would.

    :param options: ``{section: {option: value}}`` written to the file, on
        top of a port, a log file and ``[database] connection``.
    """

    def __init__(self, database_url, options=None, directory=None):
        self.directory = pathlib.Path(directory or tempfile.mkdtemp(
            prefix='cyquota-api-'))
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log_file = self.directory / 'cyquota-api.log'
        self.config_file = self.directory / 'cyquota.conf'
        config = configparser.ConfigParser(interpolation=None)
        config.read_dict({
            'DEFAULT': {'log_file': str(self.log_file)},
            'database': {'connection': database_url},
            'api': {'host': '127.0.0.1', 'port': str(self.port)},
        })
        config.read_dict(options or {})
        with open(self.config_file, 'w') as out:
            config.write(out)
        self.process = None

    def manage(self, *args):
        """Run ``cyquota-manage`` on the same configuration."""
        return subprocess.run(
            [str(BIN / 'cyquota-manage'), '--config-file',
             str(self.config_file)] + list(args),
            check=True, capture_output=True, text=True, timeout=120)

    def start(self, timeout=60, arguments=()):
        """Start the process (with more command-line ``arguments``); return
        once ``GET /`` answers."""
        self.process = subprocess.Popen(
            [str(BIN / 'cyquota-api'), '--config-file',
             str(self.config_file)] + list(arguments),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        try:
            wait_until_serving(self.url, self.process, timeout)
        except RuntimeError as error:
            self.stop()
            raise RuntimeError('cyquota-api: %s: %s' % (
                error, self.process.stderr.read()
                .decode(errors='replace')[-3000:]))
        return self

    def stop(self, timeout=30):
        """SIGTERM, then wait; returns the exit status."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def log(self):
        """What the process logged so far."""
        return self.log_file.read_text() if self.log_file.exists() else ''

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
