"""A real ``cyquota-conductor`` (and ``cyquota-all-in-one``, whose
conductor is the same) stops within seconds of SIGTERM or SIGINT whatever
its broker does: still unreachable at start, lost while the conductor
serves; a broker that refuses its password ends start-up in one line.
The shared RabbitMQ is never stopped: the conductor reaches it through a
TCP relay of the test's own, which the test cuts.
"""

import signal
import socket
import subprocess
import threading
import time

import pytest

from servers import api_server
from tests.functional import rabbitmq

pytestmark = pytest.mark.timeout(180)

#: Seconds within which a signalled conductor must have exited.
PROMPT = 8


class Relay:
    """A TCP relay from a port of 127.0.0.1 to ``target`` (host, port),
    until ``cut()`` closes it and every connection through it."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client = self.listener.accept()[0]
            except OSError:  # cut
                return
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink),
                                 daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


#: The programs that run a conductor, and their extra arguments.
PROGRAMS = {'cyquota-conductor': [],
            'cyquota-all-in-one': ['--port', '{port}']}


def _conductor(tmp_path, transport_url, db_url, bus_name='cyquota-signals',
               program='cyquota-conductor'):
    config = tmp_path / 'conductor.conf'
    config.write_text(
        '[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
        '[database]\nconnection = %s\n[conductor]\ntopic = %s\n'
        % (transport_url, bus_name, db_url, bus_name))
    extra = [arg.format(port=api_server.free_port())
             for arg in PROGRAMS[program]]
    return subprocess.Popen(
        [str(api_server.BIN / program), '--config-file', str(config)] + extra,
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def _wait_for(process, what, timeout=60):
    """Read ``process``'s output (its logs and stderr) until a line holds
    ``what``; returns what was read (the rest stays unread)."""
    seen = []
    deadline = time.monotonic() + timeout
    for line in process.stdout:
        seen.append(line)
        if what in line:
            return ''.join(seen)
        assert time.monotonic() < deadline, ''.join(seen)
    raise AssertionError('exited before %r: %s' % (what, ''.join(seen)))


def _stopped_within(process, signum, seconds=PROMPT):
    """Send ``signum``; the exit code and the rest of the output once the
    process exited, failing if it took longer than ``seconds``."""
    process.send_signal(signum)
    try:
        out, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail('still running %d s after signal %d: %s' % (
            seconds, signum, process.communicate()[0][-2000:]))
    return process.returncode, out


@pytest.mark.parametrize('program', sorted(PROGRAMS))
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_stops_while_the_broker_is_unreachable(sqlite_db, tmp_path,
                                               signum, program):
    process = _conductor(
        tmp_path,
        'rabbit://guest:guest@127.0.0.1:%d/' % api_server.free_port(),
        sqlite_db, program=program)
    # Its second attempt: it has been retrying a while.
    _wait_for(process, 'retrying in 3.0 seconds')
    returncode, err = _stopped_within(process, signum)
    assert returncode == 0, err
    assert 'Traceback' not in err
    assert 'Signal %d received, stopping' % signum in err


def test_stops_once_the_broker_is_lost(rabbit_url, sqlite_db, tmp_path):
    relay = Relay(('127.0.0.1', 5672))
    url = rabbit_url.replace('127.0.0.1:5672', '127.0.0.1:%d' % relay.port)
    bus = rabbitmq.Bus(rabbit_url)
    process = _conductor(tmp_path, url, sqlite_db, bus.name)
    try:
        _wait_for(process, 'serving topic')
        relay.cut()
        _wait_for(process, 'Connection refused')
        returncode, err = _stopped_within(process, signal.SIGTERM)
    finally:
        process.kill()
        bus.delete()
    assert returncode == 0, err
    assert 'Traceback' not in err


@pytest.mark.parametrize('program', sorted(PROGRAMS))
def test_a_refused_password_is_one_line(rabbit_url, sqlite_db, tmp_path,
                                        program):
    url = rabbit_url.replace('guest:guest@', 'guest:Wr0ng-Secret@')
    process = _conductor(tmp_path, url, sqlite_db, program=program)
    err, _ = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert 'Traceback' not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith('%s: cannot serve on the message bus '
                           'rabbit://guest:***@127.0.0.1:5672/: ' % program)
    assert 'ACCESS_REFUSED' in last
    assert 'Wr0ng-Secret' not in err
