"""cyquota-api's waitress against idle connections, as a slowloris holds
them: ``[api] connection_limit`` and ``[api] idle_timeout``, on a real
process and real sockets on 127.0.0.1 (a bounded number, closed at the end).

The margins are wide: each wait is several times what it should take, and
each is far shorter than what the old defaults (100 connections, idle ones
closed after 120 to 150 s) would need.
"""

import pytest
import requests

from servers import api_server
from tests.functional import idle_sockets

pytestmark = pytest.mark.timeout(300)


def test_idle_connections_past_the_old_limit_leave_the_api_serving(
        tmp_path, sqlite_db):
    """The defaults: 110 idle connections (past waitress's own limit of
    100) and the API still answers, then closes them once idle."""
    with api_server.ApiServer(sqlite_db, directory=tmp_path) as server, \
            idle_sockets.idle_connections(server.port, 110) as idle:
        answer = requests.get(server.url + '/', timeout=30)
        assert answer.status_code == 200
        # [api] idle_timeout is 10 s by default.
        assert idle_sockets.all_closed_by_the_server(idle, 60)


def test_idle_connections_are_dropped_to_let_a_request_in(tmp_path,
                                                          sqlite_db):
    """Three times more idle connections than the limit: a request waits
    while they hold every place, and is answered once they are dropped."""
    options = {'api': {'connection_limit': '10', 'idle_timeout': '2'}}
    with api_server.ApiServer(sqlite_db, options=options,
                              directory=tmp_path) as server, \
            idle_sockets.idle_connections(server.port, 30) as idle:
        answer = requests.get(server.url + '/', timeout=60)
        assert answer.status_code == 200
        assert idle_sockets.all_closed_by_the_server(idle, 60)
        assert 'no longer accepting new connections' in server.log()


def test_the_connection_limit_holds(tmp_path, sqlite_db):
    """With a long idle timeout, a request past the limit waits until an
    idle connection closes."""
    options = {'api': {'connection_limit': '10', 'idle_timeout': '120'}}
    with api_server.ApiServer(sqlite_db, options=options,
                              directory=tmp_path) as server:
        with idle_sockets.idle_connections(server.port, 10):
            with pytest.raises(requests.ReadTimeout):
                requests.get(server.url + '/', timeout=3)
        # Closed by the client: their places are free again.
        assert requests.get(server.url + '/', timeout=30).status_code == 200
