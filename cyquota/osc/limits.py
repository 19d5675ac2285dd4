"""``openstack accelerator limit list|show|set|delete``: projects' own
limits in the embedded limit store (``/v1/limits``)."""

from osc_lib.command import command
from osc_lib import exceptions

_FIELDS = ('project_id', 'resource', 'resource_limit')
_TITLES = ('Project ID', 'Resource', 'Limit')


def _project_and_resource(parser):
    parser.add_argument('project', metavar='<project>', help='Project ID')
    parser.add_argument('resource', metavar='<resource>',
                        help='Resource class (FPGA, GPU, ...)')
    return parser


class ListLimits(command.Lister):
    """List projects' own limits (admin; a project's readers with
    --project of their own)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project>',
                            help='Only this project ID (required with the '
                                 'keystone limit source)')
        return parser

    def take_action(self, parsed_args):
        limits = self.app.client_manager.accelerator_quota.list_limits(
            project_id=parsed_args.project)
        return _TITLES, [tuple(limit[key] for key in _FIELDS)
                         for limit in limits]


class ShowLimit(command.ShowOne):
    """Show a project's own limit of a resource."""

    def get_parser(self, prog_name):
        return _project_and_resource(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        limits = self.app.client_manager.accelerator_quota.list_limits(
            project_id=parsed_args.project)
        for limit in limits:
            if limit['resource'] == parsed_args.resource:
                return _FIELDS, tuple(limit[key] for key in _FIELDS)
        raise exceptions.CommandError(
            'Project %s has no limit of its own for %s (the registered '
            'default applies; see "openstack accelerator quota usage show '
            '%s")' % (parsed_args.project, parsed_args.resource,
                      parsed_args.project))


class SetLimit(command.ShowOne):
    """Set a project's limit of a resource (admin; -1 is unlimited)."""

    def get_parser(self, prog_name):
        parser = _project_and_resource(super().get_parser(prog_name))
        parser.add_argument('--resource-limit', metavar='<count>', type=int,
                            required=True,
                            help='The limit; -1 is unlimited')
        return parser

    def take_action(self, parsed_args):
        limit = self.app.client_manager.accelerator_quota.set_limit(
            parsed_args.project, parsed_args.resource,
            parsed_args.resource_limit)
        return _FIELDS, tuple(limit[key] for key in _FIELDS)


class DeleteLimit(command.Command):
    """Remove a project's own limit of a resource (admin): the registered
    default applies again."""

    def get_parser(self, prog_name):
        return _project_and_resource(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        self.app.client_manager.accelerator_quota.delete_limit(
            parsed_args.project, parsed_args.resource)
