"""The embedded SQLite mode under concurrent writers in one process.

SQLite ignores FOR UPDATE; cyquota begins every transaction with BEGIN
IMMEDIATE instead. This checks that concurrent writers queue rather than
fail with "database is locked", and that the limit holds. (Races between
processes on the real databases are tested in tests/functional.)
"""

import threading

from cyquota import exception
from cyquota import quota

Q = quota.QUOTAS


def test_threads_queue_and_the_limit_holds(sqlite_db, ctx):
    Q.limits.set_registered_limit(ctx, 'FPGA', 150)
    outcomes, errors = [], []

    def work():
        for _ in range(25):
            try:
                Q.commit(ctx, 'p1', Q.reserve(ctx, 'p1', {'FPGA': 1}))
                outcomes.append('ok')
            except exception.OverQuota:
                outcomes.append('over')
            except Exception as error:  # anything else is the bug
                errors.append(repr(error))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert outcomes.count('ok') == 150
    assert outcomes.count('over') == 50
    assert Q.get_project_usage(ctx, 'p1')['FPGA'] == {
        'limit': 150, 'used': 150, 'reserved': 0, 'leased': 0,
        'promised': 0, 'available': 0}
