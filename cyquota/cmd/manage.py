"""cyquota-manage: database and ledger administration.

    cyquota-manage [--config-file F] db sync | db version
    cyquota-manage quota check [--project P] [--against-placement]
                                               exit 1 when there is drift
                                               (or a difference from the
                                               cloud's Placement)
    cyquota-manage quota sync [--project P]
                              [--from-reports | --from-placement]
                                               repair it, print each change
    cyquota-manage usage show [--project P] [--resource R]
    cyquota-manage devices sync [--full]       copy the cloud's Placement
                                               now, print what changed
    cyquota-manage budget check | rollover     prove the budgets' books
                                               (exit 1 when they disagree),
                                               roll periods over now

Every command but ``db sync`` and ``db version`` needs a migrated database
and never creates one.
"""

import functools
import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
import prettytable
import sqlalchemy as sa

from cyquota.cloud import mirror
from cyquota.cloud import placement_client
from cyquota.cloud import placement_errors
from cyquota.cloud import witness
from cyquota.cmd import budget_commands
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import exception
from cyquota.lease_tables import calendar
from cyquota import quota
from cyquota import service

PROG = 'cyquota-manage'

DESCRIPTION = ('Administer the cyquota database and quota ledger: create or '
               'upgrade the schema, find and repair drift between the '
               'counts and the records, show usage against limits.')

#: The command categories and what each is for.
CATEGORIES = {
    'db': 'database schema',
    'quota': 'reconcile counts with records',
    'usage': 'quota usage',
    'devices': "the copy of the cloud's Placement",
    'budget': budget_commands.HELP,
}


def _table(headers, rows):
    table = prettytable.PrettyTable(headers)
    table.align = 'l'
    for row in rows:
        table.add_row(row)
    return table.get_string()


def _progress(context, what):
    """A callback that reports how far a scan of the usage rows has got."""
    # Counted once the scan has started: a sync that first adopts holdings
    # may add rows.
    @functools.cache
    def total():
        return quota.QUOTAS.count_usage_rows(context, CONF.category.project)

    def report(done):
        print('%s: %d/%d usage rows (%d%%)' % (
            what, done, total(), 100 * done // max(total(), 1)),
            file=sys.stderr)
    return report


def _placement_progress(command):
    """A callback that reports how far the reads of Placement have got."""
    def report(what, done, total):
        if done == total or not done % 100:
            print('%s: %d/%d %s read from Placement (%d%%)' % (
                command, done, total, what, 100 * done // max(total, 1)),
                file=sys.stderr)
    return report


def _from_placement(command, read):
    """``read(reader)`` with a ``witness.Witness``, or None after one line
    on stderr when Placement cannot be read."""
    try:
        return read(witness.Witness.from_conf(
            progress=_placement_progress(command)))
    except (witness.Unusable, placement_errors.PlacementError) as error:
        print('%s: %s' % (command, error), file=sys.stderr)
        return None


def db_sync():
    migration.upgrade()
    print('Database is at revision(s): %s' % ', '.join(migration.version()))


def db_version():
    revisions = migration.version()
    print(', '.join(revisions) if revisions else 'None (run "db sync")')


def quota_check():
    context = cyquota_context.get_admin_context()
    project = CONF.category.project
    if CONF.category.against_placement:
        return _check_against_placement(context, project)
    found = quota.QUOTAS.check_drift(context, project,
                                     _progress(context, 'quota check'))
    drift, events, reports, trees, leases = (
        found.counts, found.events, found.reports, found.trees,
        found.leases)
    if drift:
        print('Counts that disagree with the records:')
        print(_table(['Project', 'Resource', 'Field', 'Recorded', 'Expected'],
                     [(d.project_id, d.resource, d.field, d.recorded,
                       d.expected) for d in drift]))
    if events:
        print('Drift events not yet acknowledged by "quota sync":')
        print(_table(['When', 'Project', 'Resource', 'Consumer', 'Kind',
                      'Requested', 'Applied'],
                     [(e['created_at'].isoformat(' ', 'seconds'),
                       e['project_id'], e['resource'],
                       e['consumer_id'] or '-', e['kind'], e['requested'],
                       e['applied']) for e in events]))
    if reports:
        print('Consumers whose holdings disagree with the agents\' reports '
              '("quota sync --from-reports" adopts the reports):')
        print(_table(['Project', 'Resource', 'Consumer', 'Recorded',
                      'Reported'],
                     [(r.project_id, r.resource, r.consumer_id, r.recorded,
                       r.reported) for r in reports]))
    if trees:
        print('Tree usages that disagree with the sum of their members:')
        print(_table(['Root', 'Resource', 'Field', 'Recorded', 'Expected'],
                     [(t.root_id, t.resource, t.field, t.recorded,
                       t.expected) for t in trees]))
    if leases:
        print("Lease records whose copy of the lease's status or window "
              'disagrees with the lease:')
        print(_table(['Lease', 'Project', 'Copy', 'Row', 'Field',
                      'Lease says', 'Copy says'],
                     [(d.lease_id, d.project_id or '-', d.copy, d.row,
                       d.field, _said(d.lease_says), _said(d.copy_says))
                      for d in leases]))
    if found:
        return 1
    print('No drift.')
    return 0


def _said(value):
    """A lease record's value as the check prints it (a date as the API
    writes it, a missing lease as ``(none)``)."""
    if value is None:
        return '(none)'
    return value if isinstance(value, str) else calendar.isotime(value)


def _check_against_placement(context, project):
    # Leases are in Placement only when written there.
    found = _from_placement('quota check', lambda reader: witness.check(
        context, quota.QUOTAS, reader, project,
        leases=CONF.placement.write_leases))
    if found is None:
        return 1
    lease_type = placement_client.LEASE_CONSUMER_TYPE
    for field, heading in (
            (witness.USED, 'Use that differs from Placement (ledger: used - '
             'leased; Placement: every consumer type but %s); "quota sync '
             '--from-placement" adopts Placement\'s:' % lease_type),
            (witness.LEASED, 'Leases that differ from Placement (ledger: '
             'leased; Placement: consumer type %s); "quota sync '
             '--from-placement" leaves leases alone:' % lease_type)):
        rows = [(d.project_id, d.resource, d.ledger, d.placement,
                 '%+d' % d.difference) for d in found if d.field == field]
        if rows:
            print(heading)
            print(_table(['Project', 'Resource', 'Ledger %s' % field,
                          'Placement %s' % field, 'Difference'], rows))
    if found:
        return 1
    print('No difference from Placement.')
    return 0


def quota_sync():
    context = cyquota_context.get_admin_context()
    project, placement = CONF.category.project, None
    if CONF.category.from_placement:
        placement = _from_placement(
            'quota sync', lambda reader: reader.holdings(project))
        if placement is None:
            return 1
    changes, acknowledged = quota.QUOTAS.repair(
        context, project, _progress(context, 'quota sync'),
        from_reports=CONF.category.from_reports, placement=placement)
    if changes:
        print(_table(['Project', 'Resource', 'Field', 'Old', 'New'],
                     [(c['project_id'], c['resource'], c['field'], c['old'],
                       c['new']) for c in changes]))
    print('%d count(s) repaired, %d drift event(s) acknowledged.'
          % (len(changes), acknowledged))
    return 0


def usage_show():
    context = cyquota_context.get_admin_context()
    rows, marker = [], None
    while True:
        page = quota.QUOTAS.list_usages(
            context, project_id=CONF.category.project,
            resource=CONF.category.resource, marker=marker)
        rows.extend(page)
        if len(page) < 1000:
            break
        marker = (page[-1]['project_id'], page[-1]['resource'])

    if not rows:
        print('No usage rows%s.' % _filter_text())
        return 0

    def show(value):
        return 'unlimited' if value == -1 else value
    print(_table(['Project', 'Resource', 'Used', 'Reserved', 'Leased',
                  'Promised', 'Limit', 'Available'],
                 [(r['project_id'], r['resource'], r['used'], r['reserved'],
                   r['leased'], r['promised'], show(r['limit']),
                   show(r['available'])) for r in rows]))
    return 0


def devices_sync():
    if CONF.placement.source != 'placement':
        print('devices sync: [placement] source is %s; devices are copied '
              'only with source = placement' % CONF.placement.source,
              file=sys.stderr)
        return 1
    try:
        result = mirror.sync(cyquota_context.get_admin_context(),
                             full=CONF.category.full)
    except placement_errors.PlacementError as error:
        print('devices sync: %s' % error, file=sys.stderr)
        return 1
    print(_table(['Change', 'Count'], result.rows()))
    return 0


def _filter_text():
    """`` for project P and resource R``, as the filters given."""
    given = [(what, getattr(CONF.category, what))
             for what in ('project', 'resource')]
    text = ' and '.join('%s %s' % (what, value) for what, value in given
                        if value is not None)
    return ' for ' + text if text else ''


def _add_parsers(subparsers):
    def command(category, action, func, help_text, project=False,
                resource=False):
        parser = category.add_parser(action, help=help_text)
        if project:
            parser.add_argument('--project', help='only this project id')
        if resource:
            parser.add_argument('--resource', help='only this resource')
        parser.set_defaults(func=func, project=None, resource=None,
                            from_reports=False, from_placement=False,
                            against_placement=False)
        return parser

    # Without a category, main lists them (argparse would only say that
    # one is required).
    subparsers.required = False
    db = subparsers.add_parser('db', help=CATEGORIES['db']).add_subparsers(
        dest='action', required=True)
    command(db, 'sync', db_sync, 'create or upgrade the schema')
    command(db, 'version', db_version, 'show the schema revision')
    ledger = subparsers.add_parser(
        'quota', help=CATEGORIES['quota']).add_subparsers(
        dest='action', required=True)
    command(ledger, 'check', quota_check,
            'list drift; exit code 1 when there is any',
            project=True).add_argument(
        '--against-placement', action='store_true',
        help="instead compare each project's use with what the cloud's "
             "Placement counts ([placement] options); exit code 1 when "
             "they differ or Placement cannot be read")
    adopt = command(ledger, 'sync', quota_sync,
                    'repair drift, printing each change',
                    project=True).add_mutually_exclusive_group()
    adopt.add_argument(
        '--from-reports', action='store_true',
        help="first make each consumer's holding what the agents report")
    adopt.add_argument(
        '--from-placement', action='store_true',
        help="first make each consumer's holding what the cloud's "
             "Placement counts, recording each change as a drift event; "
             "exit code 1 when Placement cannot be read")
    usage = subparsers.add_parser(
        'usage', help=CATEGORIES['usage']).add_subparsers(
        dest='action', required=True)
    command(usage, 'show', usage_show, 'usage, limits and availability',
            project=True, resource=True)
    devices = subparsers.add_parser(
        'devices', help=CATEGORIES['devices']).add_subparsers(
        dest='action', required=True)
    command(devices, 'sync', devices_sync,
            "copy the cloud's Placement now and print what changed; exit "
            "code 1 when it cannot be reached").add_argument(
        '--full', action='store_true',
        help="read every provider, not only those whose generation moved "
             "since the last copy: for changes made in Placement without "
             "moving generations (aggregates set at microversions before "
             "1.19)")
    budget_commands.add_parsers(subparsers, command)


def main(argv=None):
    """Entry point of ``cyquota-manage``; returns the exit code."""
    CONF.register_cli_opt(cfg.SubCommandOpt(
        'category', title='Commands', handler=_add_parsers))
    service.prepare_service(argv, cli=True, prog=PROG,
                            description=DESCRIPTION)
    if CONF.category.name is None:
        print('%s: a command is required: %s (see %s --help)' % (
            PROG, '; '.join('%s (%s)' % item for item in CATEGORIES.items()),
            PROG), file=sys.stderr)
        return 2
    if CONF.category.name != 'db':
        service.check_database()
    try:
        return CONF.category.func()
    except exception.CyquotaException as error:
        print('Error: %s' % error, file=sys.stderr)
        return 2
    except (db_exc.DBError, sa.exc.SQLAlchemyError) as error:
        # A failed first connection comes untranslated (service's
        # check_database), and so does a URL the driver cannot take (an
        # unknown charset): one line, naming the database as it is shown.
        service.fail('cannot use the database %s: %s' % (
            db_api.shown_url(), str(error).strip().splitlines()[0]))


if __name__ == '__main__':
    sys.exit(main())
