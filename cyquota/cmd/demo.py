"""cyquota-demo: a short walk through the quota ledger on the embedded
default (a SQLite file in the current directory, local limits).

It replays the Cyborg spec's example: an FPGA limit of 5, 3 in use, 2 more
reserved during an attach, committed when the attach succeeds; then a
refused request, a failed attach rolled back, a detach and an expiry.
"""

import sys
import time

import prettytable

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import migration
from cyquota import exception
from cyquota import quota
from cyquota import service


def _show(context, project_id, step):
    usage = quota.QUOTAS.get_project_usage(context, project_id)
    table = prettytable.PrettyTable(['Resource', 'Used', 'Reserved', 'Limit',
                                     'Available'])
    table.align = 'l'
    for resource, row in usage.items():
        table.add_row([resource, row['used'], row['reserved'],
                       'unlimited' if row['limit'] < 0 else row['limit'],
                       'unlimited' if row['available'] < 0
                       else row['available']])
    print('\n== %s\n%s' % (step, table))


def run(context, project_id):
    """The demonstration itself; returns nothing, prints as it goes."""
    quotas = quota.QUOTAS
    quotas.limit_source.set_registered_limit(context, 'FPGA', 5)
    quotas.commit(context, project_id, quotas.reserve(
        context, project_id, {'FPGA': 3}, consumer_id='vm-1'))
    _show(context, project_id, 'FPGA limit 5 (registered default); 3 FPGAs '
                               'attached to vm-1')

    attach = quotas.reserve(context, project_id, {'FPGA': 2},
                            consumer_id='vm-2', request_id='attach-vm-2')
    _show(context, project_id, 'Reserve 2 FPGAs for vm-2 while the attach '
                               'runs (reservation %s)' % attach[0])

    again = quotas.reserve(context, project_id, {'FPGA': 2},
                           consumer_id='vm-2', request_id='attach-vm-2')
    print('A retried reserve with the same request id returns the same '
          'reservation: %s' % (again == attach))

    quotas.commit(context, project_id, attach)
    _show(context, project_id, 'The attach succeeded: commit moves reserved '
                               'to used')

    try:
        quotas.reserve(context, project_id, {'FPGA': 1})
    except exception.OverQuota as error:
        print('\nOne more FPGA is refused: %s' % error)

    quotas.release(context, project_id, {'FPGA': 2}, consumer_id='vm-2')
    failed = quotas.reserve(context, project_id, {'FPGA': 1, 'GPU': 1},
                            consumer_id='vm-3')
    _show(context, project_id, 'vm-2 detached (release 2); vm-3 reserves an '
                               'FPGA and a GPU')
    quotas.rollback(context, project_id, failed)
    _show(context, project_id, 'The attach of vm-3 failed: rollback gives '
                               'the reservation back')

    quotas.reserve(context, project_id, {'GPU': 2}, expire=1)
    print('\nAn agent reserves 2 GPUs and dies; its reservation expires in '
          '1 second...')
    time.sleep(1.1)
    print('expired %d reservation(s)' % quotas.expire(context))
    _show(context, project_id, 'After expiry nothing is left reserved')


def main(argv=None):
    """Entry point of ``cyquota-demo``."""
    service.prepare_service(argv, cli=True)
    migration.upgrade()
    context = cyquota_context.get_admin_context()
    project_id = 'demo-%d' % time.time()
    print('cyquota demo on %s, project %s' % (CONF.database.connection,
                                              project_id))
    run(context, project_id)
    return 0


if __name__ == '__main__':
    sys.exit(main())
