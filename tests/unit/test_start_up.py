"""What a service does once it is set up, before it serves."""

import gc

from cyquota.cmd import api as api_cmd


def test_the_api_server_freezes_what_start_up_made(sqlite_db):
    """Once the app is built, what start-up made is out of the garbage
    collector's generations (``service.freeze_start_up``): a full
    collection walks only what was made since."""
    gc.unfreeze()
    try:
        server = api_cmd._server(host='127.0.0.1', port=0)
        try:
            frozen = gc.get_freeze_count()
            walked = len(gc.get_objects())
        finally:
            server.close()
    finally:
        gc.unfreeze()
    assert frozen > 10000
    assert walked < frozen / 10
