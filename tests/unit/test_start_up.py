"""What a service does once it is set up, before it serves."""

import gc
import subprocess
import sys

from cyquota.cmd import api as api_cmd
from cyquota.cmd import conductor as conductor_cmd
from cyquota.conductor import rpc


def _frozen_and_walked(start, stop):
    """Once ``start()`` has set a service up: how many objects are out of
    the garbage collector's generations, and how many a full collection
    walks. ``stop(service)`` ends it."""
    gc.unfreeze()
    try:
        started = start()
        try:
            return gc.get_freeze_count(), len(gc.get_objects())
        finally:
            stop(started)
    finally:
        gc.unfreeze()


def test_the_api_server_freezes_what_start_up_made(sqlite_db):
    """Once the app is built, what start-up made is out of the garbage
    collector's generations (``service.freeze_start_up``): a full
    collection walks only what was made since."""
    frozen, walked = _frozen_and_walked(
        lambda: api_cmd._server(host='127.0.0.1', port=0),
        lambda server: server.close())
    assert frozen > 10000
    assert walked < frozen / 10


def _stop(conductor):
    conductor.stop()
    conductor.wait()
    rpc.reset()


def test_the_conductor_freezes_what_start_up_made(sqlite_db):
    """The same, once the conductor serves."""
    frozen, walked = _frozen_and_walked(conductor_cmd._started, _stop)
    assert frozen > 10000
    assert walked < frozen / 10


def test_console_scripts_hide_eventlets_warning():
    """Eventlet's deprecation warning, whose message starts with a new
    line, is filtered out of every console script, whoever imports it."""
    result = subprocess.run(
        [sys.executable, '-c', 'import cyquota.cmd, eventlet'],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'Eventlet is deprecated' not in result.stderr
