"""Every command of the operator's page (doc/source/openstack.rst) runs as
written against the bed: the page's literal blocks are read, their
placeholders filled in, and each command run with the bed's credentials
(``OS_*``) and, for ``cyquota-manage``, the bed's cyquota.conf where
oslo.config looks for it (``~/.cyquota/cyquota.conf``)."""

import os
import pathlib
import re
import shlex
import subprocess

import pytest

from servers import api_server
from servers.openstack_bed import identity
from tests.functional.openstack import books

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]

PAGE = pathlib.Path(__file__).resolve().parents[3] / 'doc' / 'source' / \
    'openstack.rst'


def page_commands():
    """The commands of the page's ``::`` literal blocks, one per line
    (backslash continuations joined)."""
    commands = []
    lines = PAGE.read_text().splitlines()
    for number, line in enumerate(lines):
        if not line.endswith('::') or line.strip().startswith('..'):
            continue
        block = []
        for text in lines[number + 2:]:
            if text and not text.startswith('   '):
                break
            block.append(text.strip())
        commands.extend(
            re.sub(r'\s+', ' ', command).strip()
            for command in '\n'.join(block).replace('\\\n', ' ').split('\n')
            if command.strip())
    return commands


def test_the_page_names_the_commands_this_test_runs():
    assert page_commands() == [
        'openstack accelerator quota refusal list --consumer-id '
        '<server uuid>',
        'openstack registered limit create --service nova --region '
        'RegionOne --default-limit 2 class:FPGA',
        'openstack limit create --project <project> --service nova '
        '--region RegionOne --resource-limit 4 class:FPGA',
        'cyquota-manage quota check --against-placement',
        'cyquota-manage quota sync --from-placement',
    ]


@pytest.fixture
def run(bed, tmp_path):
    """``run(command, system=False, **placeholders)``: the page's command
    with its ``<placeholders>`` filled in, run as the bed's admin (on the
    admin project, or system-scoped); the finished process."""
    (tmp_path / '.cyquota').mkdir()
    (tmp_path / '.cyquota' / 'cyquota.conf').symlink_to(bed.cyquota.config)
    base = {key: value for key, value in os.environ.items()
            if not key.startswith('OS_')}
    base.update(HOME=str(tmp_path),
                PATH='%s:%s' % (api_server.BIN, os.environ['PATH']),
                OS_AUTH_URL=bed.urls['identity'], OS_IDENTITY_API_VERSION='3',
                OS_REGION_NAME=identity.REGION, OS_USERNAME='admin',
                OS_PASSWORD=identity.PASSWORD,
                OS_USER_DOMAIN_NAME=identity.DOMAIN)

    def run(command, system=False, **placeholders):
        for name, value in placeholders.items():
            command = command.replace('<%s>' % name.replace('_', ' '), value)
        assert '<' not in command, command
        env = dict(base, **({'OS_SYSTEM_SCOPE': 'all'} if system else {
            'OS_PROJECT_NAME': 'admin',
            'OS_PROJECT_DOMAIN_NAME': identity.DOMAIN}))
        return subprocess.run(shlex.split(command), env=env,
                              capture_output=True, text=True, timeout=300)
    return run


def test_every_command_of_the_page_against_the_bed(bed, run, fpga_profile):
    refusals, default, limit, check, repair = page_commands()
    project = books.demo_project(bed)

    # A boot refused at bind: found by the server's uuid.
    server = books.boot_refused_at_bind(bed, fpga_profile)
    assert server['status'] == 'ERROR'
    found = run(refusals, server_uuid=server['id'])
    assert found.returncode == 0, found.stderr
    assert server['id'] in found.stdout and 'FPGA' in found.stdout

    # The ERROR server keeps its allocation: the witness shows it, the
    # repair adopts Placement's count, and again once the server is gone.
    checked = run(check)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert project in checked.stdout
    assert run(repair).returncode == 0
    assert run(check).returncode == 0
    bed.delete_server(server['id'])
    assert run(repair).returncode == 0
    assert run(check).returncode == 0

    # One Keystone limit per project and class, a system administrator's
    # commands. The bed's other tests find Keystone as they left it.
    system = bed.session(system=True)
    service = bed.keystone.ids['service:compute']

    def registered():
        return bed.call('identity', 'GET', '/registered_limits?service_id=%s'
                        '&resource_name=class:FPGA' % service,
                        session=system).json()['registered_limits']
    for earlier in registered():
        bed.call('identity', 'DELETE', '/registered_limits/%s'
                 % earlier['id'], session=system)
    made = run(default, system=True)
    assert made.returncode == 0, made.stderr
    made = run(limit, system=True, project=project)
    assert made.returncode == 0, made.stderr
    [default_limit] = registered()
    [ours] = bed.call('identity', 'GET', '/limits?project_id=%s&'
                      'resource_name=class:FPGA' % project,
                      session=system).json()['limits']
    assert (default_limit['default_limit'], ours['resource_limit']) == (2, 4)
    books.delete_keystone_limit(bed, ours['id'])
    bed.call('identity', 'DELETE', '/registered_limits/%s'
             % default_limit['id'], session=system)
