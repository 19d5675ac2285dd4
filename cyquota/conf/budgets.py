"""[budgets] options: the periods of accelerator-hour budgets and how
often the conductor rolls them over (SPEC 3.8, doc/source/budgets.rst)."""

from oslo_config import cfg

budgets_group = cfg.OptGroup(
    'budgets', title='Accelerator-hour budgets',
    help='Budgets of accelerator-hours per project and resource per period. '
         'Off unless an admin sets one: a project without a budget is not '
         'budget-limited.')

budgets_opts = [
    cfg.StrOpt(
        'period', default='P1M',
        help='The length of a budget period, an ISO 8601 duration: whole '
             'months or years (P1M, the default: calendar months in UTC; '
             'P3M: quarters) or a fixed length (P7D: weeks from Monday '
             '00:00 UTC; PT1H). Each period starts with a refill of every '
             'budget. Changing it starts new periods at the next roll-over.'),
    cfg.IntOpt(
        'rollover_interval', default=60, min=1,
        help='Seconds between two runs of the conductor\'s periodic task '
             'that closes ended periods and refills budgets: a period is '
             'rolled over within one interval of its start, exactly once '
             'with several conductors. Until then a reserve is judged '
             'against the period before.'),
]


def register_opts(conf):
    conf.register_group(budgets_group)
    conf.register_opts(budgets_opts, group=budgets_group)


def list_opts():
    return {budgets_group: budgets_opts}
