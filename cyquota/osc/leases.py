"""``openstack accelerator lease create|list|show|set|delete``:
accelerators a project holds over a window (``/v1/leases``)."""

import logging

from cliff import columns
from osc_lib.cli import parseractions
from osc_lib.command import command
from osc_lib import exceptions

from cyquota.osc import client

LOG = logging.getLogger(__name__)

_STATUSES = ('PENDING', 'ACTIVE', 'ENDED', 'ERROR')
_FIELDS = ('id', 'name', 'project_id', 'user_id', 'status', 'status_reason',
           'start_date', 'end_date', 'created_at', 'updated_at',
           'reservations')
_LIST_COLUMNS = (('id', 'ID'), ('name', 'Name'), ('project_id', 'Project ID'),
                 ('status', 'Status'), ('start_date', 'Start Date'),
                 ('end_date', 'End Date'))
_DATES_HELP = 'ISO 8601 with a UTC offset, e.g. 2027-03-01T10:00:00+00:00'


class ReservationsColumn(columns.FormattableColumn):
    """A lease's reservations: one line each in a table (``<id>: <amount>
    x <resource_type>``, its ``member_of``, ``member_key`` and devices),
    the API's list in JSON and YAML."""

    def human_readable(self):
        lines = []
        for reservation in self._value:
            parts = ['%(id)s: %(amount)d x %(resource_type)s' % reservation]
            if reservation['member_of']:
                parts.append('member_of %s' % ' '.join(
                    reservation['member_of']))
            if reservation['member_key']:
                parts.append('member_key %s' % reservation['member_key'])
            if reservation['allocations']:
                parts.append('on %s' % ', '.join(
                    '%(resource_provider_name)s (%(amount)d)' % allocation
                    for allocation in reservation['allocations']))
            lines.append('; '.join(parts))
        return '\n'.join(lines)

    def machine_readable(self):
        return self._value


def _value(lease, field):
    value = lease[field]
    return ReservationsColumn(value) if field == 'reservations' else value


def _lease_columns(lease):
    """``(fields, values)`` of a lease for a ShowOne."""
    return _FIELDS, tuple(_value(lease, field) for field in _FIELDS)


def _amount(reservation):
    """A ``--reservation`` with its ``amount`` as an int, or a clear
    error."""
    try:
        reservation['amount'] = int(reservation['amount'])
    except ValueError:
        raise exceptions.CommandError(
            '--reservation: amount must be an integer, got %r'
            % reservation['amount'])
    return reservation


class CreateLease(command.ShowOne):
    """Create a lease: accelerators for a project over a window.

    It is ACTIVE at once when it starts now, else PENDING.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>', help='Lease name')
        parser.add_argument(
            '--start-date', metavar='<date>',
            help='Start: %s, or "now" (the default)' % _DATES_HELP)
        parser.add_argument('--end-date', metavar='<date>', required=True,
                            help='End (exclusive): %s' % _DATES_HELP)
        parser.add_argument(
            '--reservation', dest='reservations', required=True,
            metavar='resource_type=<type>,amount=<n>[,member_of=<m>]'
                    '[,member_key=<key>]',
            action=parseractions.MultiKeyValueCommaAction,
            required_keys=['resource_type', 'amount'],
            optional_keys=['member_of', 'member_key'],
            help='A resource to hold, e.g. resource_type=accelerator:FPGA,'
                 'amount=2; member_of takes one Placement member_of value '
                 '(U, in:U1,U2, !U, !in:U1,U2), member_key a pool key '
                 '(reservation:<id>). Repeat for more resources.')
        parser.add_argument('--project', metavar='<project>',
                            help="Another project than the caller's "
                                 "(admins)")
        return parser

    def take_action(self, parsed_args):
        reservations = []
        for given in parsed_args.reservations:
            reservation = _amount(dict(given))
            if 'member_of' in reservation:
                reservation['member_of'] = [reservation['member_of']]
            reservations.append(reservation)
        lease = {'end_date': parsed_args.end_date,
                 'reservations': reservations}
        for key in ('name', 'start_date'):
            if getattr(parsed_args, key) is not None:
                lease[key] = getattr(parsed_args, key)
        if parsed_args.project is not None:
            lease['project_id'] = parsed_args.project
        return _lease_columns(
            self.app.client_manager.accelerator_quota.create_lease(lease))


class ListLeases(command.Lister):
    """List leases, newest first: the caller's project's, or every
    project's for an admin.

    Every page is read, up to ``--limit`` leases when given;
    ``--marker`` starts after a lease.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--status', choices=_STATUSES,
                            help='Only leases in this status')
        parser.add_argument('--project', metavar='<project>',
                            help='Only this project ID (admins for another '
                                 'project)')
        parser.add_argument('--long', action='store_true',
                            help='Also the user and the reservations')
        parser.add_argument('--limit', metavar='<count>', type=int,
                            help='At most this many leases (every page is '
                                 'read until then; default: all)')
        parser.add_argument('--marker', metavar='<lease>',
                            help='Start after this lease ID')
        return parser

    def take_action(self, parsed_args):
        leases = self.app.client_manager.accelerator_quota.list_leases(
            project_id=parsed_args.project, status=parsed_args.status,
            limit=parsed_args.limit, marker=parsed_args.marker)
        columns = _LIST_COLUMNS
        if parsed_args.long:
            columns += (('user_id', 'User ID'),
                        ('reservations', 'Reservations'))
        return (tuple(title for _, title in columns), [
            tuple(_value(lease, key) for key, _ in columns)
            for lease in leases])


class ShowLease(command.ShowOne):
    """Show a lease, with the devices it holds."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', metavar='<lease>', help='Lease ID')
        return parser

    def take_action(self, parsed_args):
        return _lease_columns(self.app.client_manager.accelerator_quota
                              .show_lease(parsed_args.lease))


class SetLease(command.ShowOne):
    """Change a lease's name, dates or amounts; a refusal changes
    nothing."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', metavar='<lease>', help='Lease ID')
        parser.add_argument('--name', metavar='<name>', help='New name')
        parser.add_argument('--start-date', metavar='<date>',
                            help='New start, while PENDING: %s, or "now"'
                                 % _DATES_HELP)
        parser.add_argument('--end-date', metavar='<date>',
                            help='New end: %s' % _DATES_HELP)
        parser.add_argument(
            '--reservation', dest='reservations',
            metavar='id=<reservation-id>,amount=<n>',
            action=parseractions.MultiKeyValueAction,
            required_keys=['id', 'amount'],
            help='New amount of one of the lease\'s reservations (their '
                 'ids are in "lease show"); repeat for more')
        return parser

    def take_action(self, parsed_args):
        changes = {key: getattr(parsed_args, key)
                   for key in ('name', 'start_date', 'end_date')
                   if getattr(parsed_args, key) is not None}
        if parsed_args.reservations:
            changes['reservations'] = [
                _amount(dict(given))
                for given in parsed_args.reservations]
        if not changes:
            raise exceptions.CommandError(
                'Nothing to change: give --name, --start-date, --end-date '
                'or --reservation')
        return _lease_columns(
            self.app.client_manager.accelerator_quota.update_lease(
                parsed_args.lease, changes))


class DeleteLease(command.Command):
    """End leases now; they stay readable as ENDED."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('leases', metavar='<lease>', nargs='+',
                            help='Lease ID(s)')
        return parser

    def take_action(self, parsed_args):
        api = self.app.client_manager.accelerator_quota
        if len(parsed_args.leases) == 1:
            api.delete_lease(parsed_args.leases[0])
            return
        failed = 0
        for lease_id in parsed_args.leases:
            try:
                api.delete_lease(lease_id)
            except client.ApiError as error:
                failed += 1
                LOG.error('lease %s: %s', lease_id, error)
        if failed:
            raise exceptions.CommandError(
                '%d of %d leases failed to end'
                % (failed, len(parsed_args.leases)))
