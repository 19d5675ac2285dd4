"""``openstack accelerator quota usage show|list``: what projects use,
hold and may still take (``GET /v1/quota_usages``)."""

from osc_lib.command import command

# The counts of a usage document, in the order the tables show them.
_COUNTS = ('used', 'reserved', 'leased', 'promised', 'limit', 'available')
_TREE = ('root_id', 'used', 'reserved', 'limit', 'available')


def _title(key):
    return key.replace('_', ' ').title().replace(' Id', ' ID')


class ShowQuotaUsage(command.Lister):
    """Show a project's usage, limit and availability per resource.

    Under strict-two-level each row also has its tree's usage against the
    root's limit.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project>',
                            help='Project ID')
        return parser

    def take_action(self, parsed_args):
        usage = self.app.client_manager.accelerator_quota.show_usage(
            parsed_args.project)
        resources = usage['resources']
        with_tree = any('tree' in counts for counts in resources.values())
        headers = ('Resource',) + tuple(_title(key) for key in _COUNTS)
        if with_tree:
            headers += tuple('Tree ' + _title(key) for key in _TREE)
        rows = []
        for resource, counts in sorted(resources.items()):
            row = (resource,) + tuple(counts[key] for key in _COUNTS)
            if with_tree:
                tree = counts.get('tree', {})
                row += tuple(tree.get(key) for key in _TREE)
            rows.append(row)
        return headers, rows


class ListQuotaUsages(command.Lister):
    """List the usage rows of every project (admin).

    Without ``--limit`` every page is read; with it, one page from
    ``--marker`` on.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project>',
                            help='Only this project ID')
        parser.add_argument('--resource', metavar='<resource>',
                            help='Only this resource class (FPGA, GPU, ...)')
        parser.add_argument('--limit', metavar='<count>', type=int,
                            help='At most this many rows (one page)')
        parser.add_argument('--marker', metavar='<project>:<resource>',
                            help='Start after this row')
        return parser

    def take_action(self, parsed_args):
        api = self.app.client_manager.accelerator_quota
        rows, marker = [], parsed_args.marker
        while True:
            page, more = api.list_usages(
                project_id=parsed_args.project,
                resource=parsed_args.resource, limit=parsed_args.limit,
                marker=marker)
            rows.extend(page)
            if parsed_args.limit is not None or not more or not page:
                break
            marker = '%(project_id)s:%(resource)s' % page[-1]
        keys = ('project_id', 'resource') + _COUNTS
        return (tuple(_title(key) for key in keys),
                [tuple(row[key] for key in keys) for row in rows])
