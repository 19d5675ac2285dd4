"""HTTP calls bounded by a deadline, from connect to the last byte.

A ``timeout`` of requests bounds each socket operation, not the call: a
service that drips its headers or its body a byte at a time holds the
caller as long as it likes. The sessions of :func:`session` watch their
connections' sockets: inside a :class:`Deadline` block, when the time is
up, the socket of the call in progress is shut down, which wakes any read
blocked on it (plain or TLS), and :attr:`Deadline.expired` tells the caller
that the call failed for want of time.

The deadline holds the socket itself, not the connection: when an answer
ends with the connection (HTTP/1.0, ``Connection: close``), http.client
hands the socket over to the response and the connection forgets it, while
the body is still being read from it.
"""

import socket
import threading

import requests
from requests import adapters
from urllib3 import connection
from urllib3 import connectionpool

# The Deadline of the call this thread is making, if any.
_current = threading.local()


class Deadline:
    """A block whose HTTP calls (through :func:`session`) end at the
    latest ``seconds`` after it starts."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets = []
        self._over = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self):
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc_info):
        # Under the lock: once the block is over, the timer cannot shut down
        # a connection that went back to the pool for the next call.
        with self._lock:
            self._over = True
            self._timer.cancel()
        _current.deadline = None

    def watch(self, sock):
        """Shut ``sock`` down when the time is up."""
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut_down(sock)

    def _expire(self):
        with self._lock:
            if self._over:
                return
            self.expired = True
            for sock in self._sockets:
                _shut_down(sock)


def _shut_down(sock):
    try:
        # socket.socket's own shutdown: SSLSocket.shutdown would also drop
        # its SSL object under the feet of the thread reading from it. A
        # socket the connection closed while its response still reads from
        # it keeps its descriptor until the response lets go.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # really closed already


def _watch(http_connection):
    deadline = getattr(_current, 'deadline', None)
    if deadline is not None and http_connection.sock is not None:
        deadline.watch(http_connection.sock)


class _Watched:
    """A connection the call's deadline watches once it is connected."""

    def connect(self):
        super().connect()
        _watch(self)

    def request(self, *args, **kwargs):
        # A connection reused from the pool is not connected again (a new
        # one has no socket yet: connect watches it).
        _watch(self)
        return super().request(*args, **kwargs)


class _WatchedHTTPConnection(_Watched, connection.HTTPConnection):
    """A plain HTTP connection under the deadline."""


class _WatchedHTTPSConnection(_Watched, connection.HTTPSConnection):
    """A TLS connection under the deadline."""


class _HTTPPool(connectionpool.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _HTTPSPool(connectionpool.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {'http': _HTTPPool, 'https': _HTTPSPool}


class _WatchedAdapter(adapters.HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager


def session():
    """A requests Session whose calls a :class:`Deadline` bounds."""
    watched = requests.Session()
    adapter = _WatchedAdapter()
    watched.mount('http://', adapter)
    watched.mount('https://', adapter)
    return watched
