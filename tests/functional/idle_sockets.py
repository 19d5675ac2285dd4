"""Idle connections to a server on 127.0.0.1, as a slowloris holds them,
and whether the server closes them."""

import contextlib
import socket
import time


@contextlib.contextmanager
def idle_connections(port, count, host='127.0.0.1'):
    """``count`` connections to ``host``:``port`` that never send a byte,
    closed at the end of the block."""
    sockets = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection((host, port),
                                                    timeout=10))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def _closed_by_the_server(sock, timeout):
    """Whether the server closes ``sock`` within ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b''
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def all_closed_by_the_server(sockets, seconds):
    """Whether the server closes every one of ``sockets`` within
    ``seconds`` from now (each waited for at least 1 s)."""
    deadline = time.monotonic() + seconds
    return all(_closed_by_the_server(
        sock, max(1, deadline - time.monotonic())) for sock in sockets)
