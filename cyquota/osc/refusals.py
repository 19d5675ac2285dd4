"""``openstack accelerator quota refusal list``: the reserves for a
consumer that cyquota refused over quota or by an exhausted budget, as it
recorded them (``GET /v1/refusals``), to find why an instance's bind
failed when Nova shows no reason."""

from osc_lib.command import command

_COLUMNS = (('id', 'ID'), ('project_id', 'Project ID'),
            ('consumer_id', 'Consumer ID'), ('request_id', 'Request ID'),
            ('overs', 'Over'), ('budget', 'Budget'),
            ('created_at', 'Created At'))


def _overs(overs):
    """Each limit that refused, on one line: ``FPGA: limit 2, used 2,
    reserved 0, requested 1 (project p1)``."""
    return '\n'.join(
        '%s: limit %d, used %d, reserved %d, requested %d (%s %s)' % (
            over['resource'], over['limit'], over['used'], over['reserved'],
            over['requested'], over['scope'], over['project_id'])
        for over in overs)


def _budget(budget):
    """The budget that refused, on one line: ``GPU: 0.0 hour(s) left
    until 2026-12-01T00:00:00+00:00 (project p1)``; empty for none."""
    if not budget:
        return ''
    return '%s: %s hour(s) left until %s (project %s)' % (
        budget['resource'], budget['balance_hours'], budget['period_end'],
        budget['project_id'])


class ListRefusals(command.Lister):
    """List recorded refusals over quota or by a budget, newest first.

    A project's readers and members see their project's, an admin every
    project's. Every page is read, up to ``--limit`` rows when given.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--consumer-id', metavar='<consumer>',
                            help='Only this consumer (a Nova instance UUID)')
        parser.add_argument('--project', metavar='<project>',
                            help='Only this project ID (default: your own '
                                 "project; an admin's: every project)")
        parser.add_argument('--limit', metavar='<count>', type=int,
                            help='At most this many refusals (every page '
                                 'is read until then; default: all)')
        parser.add_argument('--marker', metavar='<id>',
                            help='Start after this refusal ID')
        return parser

    def take_action(self, parsed_args):
        refusals = self.app.client_manager.accelerator_quota.list_refusals(
            consumer_id=parsed_args.consumer_id,
            project_id=parsed_args.project, limit=parsed_args.limit,
            marker=parsed_args.marker)
        if parsed_args.formatter == 'table':
            refusals = [dict(row, overs=_overs(row['overs']),
                             budget=_budget(row.get('budget')))
                        for row in refusals]
        return (tuple(title for _, title in _COLUMNS),
                [tuple(row.get(key) for key, _ in _COLUMNS)
                 for row in refusals])
