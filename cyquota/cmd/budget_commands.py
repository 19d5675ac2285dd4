"""``cyquota-manage budget``: the proof of the budgets' books and their
roll-over by hand.

    cyquota-manage budget check      exit 1 with a table of the budgets
                                     whose books disagree with their
                                     entries; one line when all agree
    cyquota-manage budget rollover   close ended periods and refill now
                                     (what the conductors do every
                                     [budgets] rollover_interval)
"""

import prettytable

from cyquota.budgets import check as budget_check
from cyquota.budgets import exhaustion
from cyquota.budgets import rollover as budget_rollover
from cyquota import context as cyquota_context

HELP = 'accelerator-hour budgets'


def _shown(value):
    return '(none)' if value is None else value


def check():
    """Print what disagrees; the exit code: 1 if anything does."""
    found = budget_check.disagreements(cyquota_context.get_admin_context())
    if not found:
        print('All budgets agree with their entries.')
        return 0
    print('Budgets whose books disagree with their entries (unit-seconds; '
          'expected: the sum of the entries up to the books\' period plus '
          'the meter when the open accrual began):')
    table = prettytable.PrettyTable(['Project', 'Resource', 'Field',
                                     'Recorded', 'Expected'])
    table.align = 'l'
    for item in found:
        table.add_row([item.project_id, item.resource, item.what,
                       _shown(item.found), _shown(item.expected)])
    print(table.get_string())
    return 1


def rollover():
    """Roll every project's books over to the current period now."""
    context = cyquota_context.get_admin_context()
    moved = budget_rollover.roll_all(context)
    told = exhaustion.tell(context)
    print('Rolled over the budgets of %d project(s); %d budget(s) found '
          'spent.' % (moved, told))
    return 0


def add_parsers(subparsers, command):
    """The ``budget`` category, its actions made by ``command(category,
    action, func, help)``."""
    budget = subparsers.add_parser('budget', help=HELP).add_subparsers(
        dest='action', required=True)
    command(budget, 'check', check,
            'prove every budget\'s books from its entries; exit code 1 '
            'when any disagree')
    command(budget, 'rollover', rollover,
            'close ended periods and refill every budget now')
