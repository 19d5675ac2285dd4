"""``openstack accelerator budget show|set|delete|credit|entries``: a
project's budgets of accelerator-hours (``/v1/budgets``, SPEC 3.8)."""

from osc_lib.command import command

# A budget's fields, in the order the tables show them.
_BUDGET = ('hours', 'refill', 'cap', 'period_start', 'period_end',
           'spent_hours', 'charged_hours', 'credited_hours',
           'remaining_hours', 'next_refill')
_ENTRY = ('id', 'kind', 'hours', 'resource', 'period_start', 'at', 'actor',
          'reason', 'lease_id')


def _title(key):
    return 'ID' if key == 'id' else key.replace('_', ' ').title().replace(
        ' Id', ' ID')


def _project(parser, resource=False):
    parser.add_argument('project', metavar='<project>', help='Project ID')
    if resource:
        parser.add_argument('resource', metavar='<resource>',
                            help='Resource class (FPGA, GPU, ...)')
    return parser


def _hours(parser, help_text):
    parser.add_argument('--hours', metavar='<hours>', type=float,
                        required=True, help=help_text)


def _budget_rows(budget):
    headers = ('Resource',) + tuple(_title(key) for key in _BUDGET)
    return headers, [(resource,) + tuple(fields[key] for key in _BUDGET)
                     for resource, fields in sorted(
                         budget['resources'].items())]


class ShowBudget(command.Lister):
    """Show a project's budgets: per resource, its hours per period, what
    this period spent, charged and credited, and what remains."""

    def get_parser(self, prog_name):
        return _project(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        return _budget_rows(self.app.client_manager.accelerator_quota
                            .show_budget(parsed_args.project))


class SetBudget(command.Lister):
    """Set or change a project's budget of a resource (admin).

    A new budget starts full; a change moves this period's balance by the
    change of hours, and the refill and cap apply from the next period.
    """

    def get_parser(self, prog_name):
        parser = _project(super().get_parser(prog_name), resource=True)
        _hours(parser, 'Accelerator-hours per period (at most six '
                       'decimals)')
        parser.add_argument('--refill', choices=('reset', 'carry'),
                            help="At each period's start: reset (the "
                                 'default) makes the balance the hours; '
                                 'carry adds them, up to --cap')
        parser.add_argument('--cap', metavar='<hours>', type=float,
                            help='The most a carry refill leaves (at least '
                                 '--hours; default: no cap)')
        return parser

    def take_action(self, parsed_args):
        budget = {'hours': parsed_args.hours, 'cap': parsed_args.cap}
        if parsed_args.refill is not None:
            budget['refill'] = parsed_args.refill
        return _budget_rows(
            self.app.client_manager.accelerator_quota.set_budget(
                parsed_args.project, parsed_args.resource, budget))


class DeleteBudget(command.Command):
    """End a project's budget of a resource (admin); its entries stay."""

    def get_parser(self, prog_name):
        return _project(super().get_parser(prog_name), resource=True)

    def take_action(self, parsed_args):
        self.app.client_manager.accelerator_quota.delete_budget(
            parsed_args.project, parsed_args.resource)


class CreditBudget(command.ShowOne):
    """Credit hours to this period's balance of a project's budget of a
    resource (admin), for a reason."""

    def get_parser(self, prog_name):
        parser = _project(super().get_parser(prog_name), resource=True)
        _hours(parser, 'Accelerator-hours to add (above 0, at most six '
                       'decimals)')
        parser.add_argument('--reason', metavar='<reason>', required=True,
                            help='Why (1 to 255 characters), kept with the '
                                 'entry')
        return parser

    def take_action(self, parsed_args):
        entry = self.app.client_manager.accelerator_quota.credit_budget(
            parsed_args.project, parsed_args.resource, parsed_args.hours,
            parsed_args.reason)
        return (tuple(_title(key) for key in _ENTRY),
                tuple(entry[key] for key in _ENTRY))


class ListBudgetEntries(command.Lister):
    """List the entries of a project's budgets, newest first: refills,
    credits, accruals (attaches' use), leases' charges and refunds.

    Every page is read, up to ``--limit`` entries when given.
    """

    def get_parser(self, prog_name):
        parser = _project(super().get_parser(prog_name))
        parser.add_argument('--limit', metavar='<count>', type=int,
                            help='At most this many entries (every page is '
                                 'read until then; default: all)')
        parser.add_argument('--marker', metavar='<id>',
                            help='Start after this entry ID')
        return parser

    def take_action(self, parsed_args):
        entries = (self.app.client_manager.accelerator_quota
                   .list_budget_entries(parsed_args.project,
                                        limit=parsed_args.limit,
                                        marker=parsed_args.marker))
        return (tuple(_title(key) for key in _ENTRY),
                [tuple(entry[key] for key in _ENTRY) for entry in entries])
