"""The bed's processes: each in a process group of its own, its output in
a log file of the bed's directory, all of them killed at teardown with
whatever they started.

Each is also killed when the thread that started it ends (``setpriv
--pdeathsig``), so that a test run killed outright leaves no service
running: start them from the main thread.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import time

import requests

from servers.cached_venv import unavailable

_DIE_WITH_PARENT = (['setpriv', '--pdeathsig', 'KILL', '--']
                    if shutil.which('setpriv') else [])


class Processes:
    """The processes started in ``directory`` (their logs go there)."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.running = {}

    def log_path(self, name):
        return self.directory / ('%s.out' % name)

    def start(self, name, argv, env=None):
        """Start ``argv`` as ``name`` (a name unique in the bed); returns
        the ``Popen``."""
        with open(self.log_path(name), 'ab') as log:
            process = subprocess.Popen(
                _DIE_WITH_PARENT + [str(arg) for arg in argv], stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=_environment(env), start_new_session=True)
        self.running[name] = process
        return process

    def run(self, name, argv, env=None, timeout=600):
        """Run ``argv`` to its end; ``unavailable`` when it fails."""
        with open(self.log_path(name), 'ab') as log:
            try:
                subprocess.run([str(arg) for arg in argv], stdout=log,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, check=True,
                               env=_environment(env),
                               timeout=timeout)
            except subprocess.SubprocessError as error:
                unavailable('%s failed: %s\n%s' % (name, error,
                                                   self.tail(name)))

    def tail(self, name, size=3000):
        """The end of ``name``'s output."""
        path = self.log_path(name)
        if not path.exists():
            return ''
        return path.read_bytes()[-size:].decode(errors='replace')

    def check(self, name):
        """``unavailable`` when ``name`` has exited."""
        process = self.running[name]
        if process.poll() is not None:
            unavailable('%s exited with %s:\n%s' % (
                name, process.returncode, self.tail(name)))

    def wait_until_answering(self, name, url, statuses=(200,), timeout=120,
                             watched=()):
        """Return once ``GET url`` answers one of ``statuses``;
        ``unavailable`` when process ``name`` (or one of ``watched``)
        exits first or after ``timeout`` s."""
        def answers():
            try:
                return requests.get(url, timeout=2).status_code in statuses
            except requests.RequestException:
                return False
        wait_for('%s answering on %s' % (name, url), answers, timeout,
                 alive=[lambda name=name: self.check(name)
                        for name in (name,) + tuple(watched)])

    def stop(self, *names, timeout=20):
        """SIGTERM to the groups of ``names`` at once, SIGKILL to what is
        left of them after ``timeout`` s."""
        stopping = [self.running.pop(name) for name in names]
        for process in stopping:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in stopping:
            try:
                process.wait(timeout=max(0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for process in stopping:
            # Children (workers, helper processes) may outlive the leader.
            _signal_group(process, signal.SIGKILL)
            process.wait()

    def stop_all(self):
        self.stop(*self.running, timeout=5)

    def rss_bytes(self):
        """The resident memory of every process of the bed's groups."""
        return sum(self.rss_by_name().values())

    def rss_by_name(self):
        """``{name: bytes}``: the resident memory of each running
        process's group (its workers and helpers included)."""
        names = {process.pid: name for name, process in self.running.items()}
        rss = dict.fromkeys(names.values(), 0)
        for status in pathlib.Path('/proc').glob('[0-9]*/stat'):
            try:
                fields = status.read_text().rsplit(')', 1)[1].split()
            except OSError:
                continue
            # After the command: state, ppid, pgrp, ..., rss (24th field).
            if int(fields[2]) in names:
                rss[names[int(fields[2])]] += (
                    int(fields[21]) * os.sysconf('SC_PAGE_SIZE'))
        return rss


def _environment(env):
    """This process's environment but for its ``PYTHONPATH`` (the services
    run from their own virtualenvs), with ``env`` on top."""
    environment = {name: value for name, value in os.environ.items()
                   if name != 'PYTHONPATH'}
    environment.update(env or {})
    return environment


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


def wait_for(what, predicate, timeout, interval=0.5, alive=()):
    """Return ``predicate()``'s first true value; ``unavailable`` naming
    ``what`` after ``timeout`` s. ``alive``: callables run each round
    (``Processes.check``) that stop the wait when a process died."""
    deadline = time.monotonic() + timeout
    while True:
        for check in alive:
            check()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            unavailable('%s did not happen within %d s' % (what, timeout))
        time.sleep(interval)
