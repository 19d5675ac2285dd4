"""A real ``cyquota-api`` process on 127.0.0.1 for functional tests and the
REST benchmark: a configuration file of its own, a free port, its log in
a file; started and stopped like an operator would."""

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
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class ApiServer:
    """``cyquota-api --config-file <its own>``.

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

    def start(self, timeout=60):
        """Start the process; return once ``GET /`` answers."""
        self.process = subprocess.Popen(
            [str(BIN / 'cyquota-api'), '--config-file',
             str(self.config_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('cyquota-api exited with %d: %s' % (
                    self.process.returncode, self.process.stderr.read()
                    .decode(errors='replace')[-3000:]))
            try:
                if requests.get(self.url + '/', timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError('cyquota-api did not answer on %s' % self.url)

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
        return self.log_file.read_text() if self.log_file.exists() else ''

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
