"""cyquota-manage as an operator runs it, with a config file: its
``main`` in the test's process (``tests.commands``), and as a real process
where the process is the subject (its entry point, its exit with one
line)."""

import datetime
import functools
import sqlite3
import subprocess
import sys

import pytest

from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import quota
from tests import commands
from tests import fixtures


def _rows(table):
    """The cells of a printed table's body rows."""
    return [[cell.strip() for cell in line.strip('|').split('|')]
            for line in table.splitlines()
            if line.startswith('|') and not line.startswith('| Project')]


def _config(tmp_path):
    """The config file of a SQLite database in ``tmp_path``, and its
    URL."""
    url = 'sqlite:///%s' % (tmp_path / 'cyquota.sqlite')
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = %s\n' % url)
    return config, url


@pytest.fixture
def manage(tmp_path):
    """``manage(*args)``: the command with the config file, in this
    process; the database's URL as ``manage.url``."""
    config, url = _config(tmp_path)
    run = functools.partial(commands.manage, config)
    run.url = url
    return run


@pytest.fixture
def manage_process(tmp_path):
    """The same, a real process."""
    config, url = _config(tmp_path)

    def run(*args):
        return subprocess.run(
            [sys.executable, '-m', 'cyquota.cmd.manage', '--config-file',
             str(config), *args], capture_output=True, text=True,
            timeout=120)
    run.url = url
    return run


def test_db_sync_and_version(manage_process):
    manage = manage_process
    assert manage('db', 'version').stdout.strip() == 'None (run "db sync")'
    result = manage('db', 'sync')
    assert result.returncode == 0, result.stderr
    heads = ', '.join(migration.heads())
    assert result.stdout == 'Database is at revision(s): %s\n' % heads
    assert manage('db', 'version').stdout == heads + '\n'


def test_check_sync_and_usage_show(manage, ctx):
    assert manage('db', 'sync').returncode == 0
    fixtures.use_database(manage.url, migrate=False)
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 4)
    quota.QUOTAS.commit(ctx, 'proj-a', quota.QUOTAS.reserve(
        ctx, 'proj-a', {'FPGA': 2, 'GPU': 1}, consumer_id='vm1'))

    shown = manage('usage', 'show')
    assert shown.returncode == 0
    assert _rows(shown.stdout) == [
        ['proj-a', 'FPGA', '2', '0', '0', '0', '4', '2'],
        ['proj-a', 'GPU', '1', '0', '0', '0', 'unlimited', 'unlimited']]

    clean = manage('quota', 'check')
    assert (clean.returncode, clean.stdout.strip()) == (0, 'No drift.')

    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql(
            "UPDATE quota_usages SET used = 5 WHERE resource = 'FPGA'")
    drifting = manage('quota', 'check')
    assert drifting.returncode == 1
    assert _rows(drifting.stdout) == [['proj-a', 'FPGA', 'used', '5', '2']]
    assert 'quota check: 2/2 usage rows (100%)' in drifting.stderr

    repaired = manage('quota', 'sync')
    assert repaired.returncode == 0
    assert _rows(repaired.stdout) == [['proj-a', 'FPGA', 'used', '5', '2']]
    assert '1 count(s) repaired, 0 drift event(s) acknowledged.' \
        in repaired.stdout
    assert manage('quota', 'check').returncode == 0


def test_bad_input_is_a_clear_error(manage):
    assert manage('db', 'sync').returncode == 0
    result = manage('usage', 'show', '--resource', 'BOGUS')
    assert result.returncode == 2
    assert "Unknown resource 'BOGUS'" in result.stderr
    assert 'Traceback' not in result.stderr
    result = manage('usage', 'show', '--project', 'not a project')
    assert result.returncode == 2
    assert "Invalid project id 'not a project'" in result.stderr


def test_agent_reports_in_check_and_sync(manage, ctx):
    from cyquota.quota import attachments
    assert manage('db', 'sync').returncode == 0
    fixtures.use_database(manage.url, migrate=False)
    quota.QUOTAS.commit(ctx, 'proj-a', quota.QUOTAS.reserve(
        ctx, 'proj-a', {'FPGA': 2}, consumer_id='vm1'))
    attachments.record_report(ctx, 'host-a', [dict(
        project_id='proj-a', resource='FPGA', consumer_id='vm1', amount=1)])

    drifting = manage('quota', 'check')
    assert drifting.returncode == 1
    assert "disagree with the agents' reports" in drifting.stdout
    assert _rows(drifting.stdout) == [['proj-a', 'FPGA', 'vm1', '2', '1']]

    adopted = manage('quota', 'sync', '--from-reports')
    assert adopted.returncode == 0, adopted.stderr
    assert _rows(adopted.stdout) == [
        ['proj-a', 'FPGA', 'consumer vm1', '2', '1'],
        ['proj-a', 'FPGA', 'used', '2', '1']]
    assert manage('quota', 'check').returncode == 0


def test_no_command_lists_the_categories(manage):
    result = manage()
    assert result.returncode == 2
    assert result.stderr.strip() == (
        'cyquota-manage: a command is required: db (database schema); '
        'quota (reconcile counts with records); usage (quota usage); '
        "devices (the copy of the cloud's Placement); "
        'budget (accelerator-hour budgets) (see cyquota-manage --help)')


def test_help_describes_the_command(manage):
    result = manage('--help')
    assert result.returncode == 0
    assert 'Administer the cyquota database and quota ledger' in result.stdout


def test_usage_show_on_no_rows_says_so(manage):
    assert manage('db', 'sync').returncode == 0
    result = manage('usage', 'show', '--resource', 'GPU')
    assert (result.returncode, result.stdout) == (
        0, 'No usage rows for resource GPU.\n')


def test_commands_never_create_the_database(manage_process, tmp_path):
    manage = manage_process
    database = tmp_path / 'cyquota.sqlite'
    for command in (('usage', 'show'), ('quota', 'sync')):
        result = manage(*command)
        assert result.returncode == 1
        assert result.stderr == (
            'cyquota-manage: database file %s does not exist: run '
            'cyquota-manage db sync\n' % database)
    assert manage('db', 'version').stdout == 'None (run "db sync")\n'
    assert not database.exists()


def test_commands_refuse_an_unmigrated_database(manage, tmp_path):
    sqlite3.connect(tmp_path / 'cyquota.sqlite').close()
    result = manage('usage', 'show')
    assert result.returncode == 1
    assert result.stderr == ('cyquota-manage: database not migrated: run '
                             'cyquota-manage db sync\n')


def test_adopting_reports_and_placement_at_once_is_a_usage_error(manage):
    result = manage('quota', 'sync', '--from-reports', '--from-placement')
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        'cyquota-manage quota sync: error: argument --from-placement: not '
        'allowed with argument --from-reports')
    assert manage('quota', 'check', '--from-placement').returncode == 2
    assert manage('quota', 'sync', '--against-placement').returncode == 2


def test_help_says_what_the_placement_flags_do(manage):
    check = ' '.join(manage('quota', 'check', '--help').stdout.split())
    assert ("compare each project's use with what the cloud's Placement "
            'counts') in check
    sync = ' '.join(manage('quota', 'sync', '--help').stdout.split())
    assert '[--from-reports | --from-placement]' in sync
    assert 'recording each change as a drift event' in sync


def test_placement_without_its_options_is_one_line(manage):
    assert manage('db', 'sync').returncode == 0
    for command in ('check', '--against-placement'), ('sync',
                                                      '--from-placement'):
        result = manage('quota', *command)
        assert (result.returncode, result.stdout) == (1, '')
        assert result.stderr == (
            'quota %s: [placement] auth_type: not set: Keystone credentials '
            'are needed (for example auth_type = password)\n' % command[0])


def test_check_lists_a_lease_copy_that_disagrees(manage, ctx):
    from cyquota import leases
    from tests.unit.placement.conftest import Tree
    assert manage('db', 'sync').returncode == 0
    fixtures.use_database(manage.url, migrate=False)
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev1', parent='cn1', inventory={'FPGA': {'total': 2}})
    leases.LEASES.reset()
    end = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
        hours=2)
    made = leases.LEASES.create(ctx, 'proj-a', dict(
        end_date=end.isoformat(), reservations=[
            {'resource_type': 'accelerator:FPGA', 'amount': 1}]))
    clean = manage('quota', 'check')
    assert (clean.returncode, clean.stdout.strip()) == (0, 'No drift.')

    with db_api.get_engine().begin() as conn:
        conn.exec_driver_sql(
            "UPDATE lease_allocations SET status = 'PENDING'")
        [row] = conn.exec_driver_sql('SELECT id FROM lease_allocations')
    drifting = manage('quota', 'check')
    assert drifting.returncode == 1
    assert ("Lease records whose copy of the lease's status or window "
            'disagrees with the lease:') in drifting.stdout
    assert [cells for cells in _rows(drifting.stdout)
            if cells[0] != 'Lease'] == [
        [made['id'], 'proj-a', 'lease_allocations', str(row.id), 'status',
         'ACTIVE', 'PENDING']]
