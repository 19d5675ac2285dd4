"""``openstack accelerator reservation list``: the ledger's reservation
rows (``GET /v1/reservations``, admin)."""

from osc_lib.command import command

_STATUSES = ('reserved', 'committed', 'rolled_back', 'expired')
_COLUMNS = (('uuid', 'UUID'), ('project_id', 'Project ID'),
            ('resource', 'Resource'), ('delta', 'Delta'),
            ('status', 'Status'), ('request_id', 'Request ID'),
            ('consumer_id', 'Consumer ID'), ('expire', 'Expire'),
            ('created_at', 'Created At'))


class ListReservations(command.Lister):
    """List reservations, newest first (admin).

    Every page is read, up to ``--limit`` rows when given;
    ``--marker`` starts after a reservation.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project>',
                            help='Only this project ID')
        parser.add_argument('--status', choices=_STATUSES,
                            help='Only reservations in this status')
        parser.add_argument('--limit', metavar='<count>', type=int,
                            help='At most this many reservations (every '
                                 'page is read until then; default: all)')
        parser.add_argument('--marker', metavar='<uuid>',
                            help='Start after this reservation UUID')
        return parser

    def take_action(self, parsed_args):
        reservations = self.app.client_manager.accelerator_quota \
            .list_reservations(project_id=parsed_args.project,
                               status=parsed_args.status,
                               limit=parsed_args.limit,
                               marker=parsed_args.marker)
        return (tuple(title for _, title in _COLUMNS),
                [tuple(row[key] for key, _ in _COLUMNS)
                 for row in reservations])
