"""``cyquota-manage devices sync`` as an operator runs it: a config file
(its ``main`` in this process, ``tests.commands``), a real Placement and
database."""

import uuid

import pytest

from cyquota.placement import providers
from servers import placement_server
from tests import commands

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def manage(tmp_path, placement, db_url):
    placement_server.empty(placement)

    def run(*args, source='placement', endpoint=placement.url):
        config = tmp_path / 'cyquota.conf'
        config.write_text(
            '[database]\nconnection = %s\n[placement]\nsource = %s\n'
            'class_map = GPU:PGPU\nauth_type = admin_token\nendpoint = %s\n'
            'token = %s\ntimeout = 5\n'
            % (db_url, source, endpoint, placement_server.TOKEN))
        return commands.manage(config, *args)
    return run


def _counts(table):
    return {cells[0]: int(cells[1]) for cells in (
        [cell.strip() for cell in line.strip('|').split('|')]
        for line in table.splitlines()
        if line.startswith('|') and 'Change' not in line)}


def test_prints_what_changed(manage, placement, ctx):
    node = placement.provider()
    gpu = placement.provider(parent=node)
    placement.inventory(gpu, {'PGPU': 2})
    placement.aggregates(gpu, [str(uuid.uuid4())])
    result = manage('devices', 'sync')
    assert result.returncode == 0, result.stderr
    counts = _counts(result.stdout)
    assert counts['providers added'] == 2
    assert counts['inventory changes'] == 1
    assert counts['aggregate membership changes'] == 1
    assert providers.get(ctx, gpu).parent_provider_uuid == node
    again = manage('devices', 'sync')
    assert again.returncode == 0
    assert set(_counts(again.stdout).values()) == {0}


def test_one_line_and_exit_1_when_it_cannot(manage):
    away = manage('devices', 'sync', endpoint='http://127.0.0.1:9')
    assert away.returncode == 1
    assert away.stderr.startswith('devices sync: Placement ')
    assert len(away.stderr.strip().splitlines()) == 1
    local = manage('devices', 'sync', source='local')
    assert local.returncode == 1
    assert local.stderr.strip() == (
        'devices sync: [placement] source is local; devices are copied '
        'only with source = placement')


def test_full_reads_what_moved_no_generation(manage, placement):
    node = placement.provider()
    gpu = placement.provider(parent=node)
    placement.inventory(gpu, {'PGPU': 2})
    assert manage('devices', 'sync').returncode == 0
    # Aggregates set at a microversion before 1.19 leave the generation.
    generation = placement.generation(gpu)
    response = placement.http.put(
        placement.url + '/resource_providers/%s/aggregates' % gpu,
        json=[str(uuid.uuid4())],
        headers={'OpenStack-API-Version': 'placement 1.18'}, timeout=30)
    assert response.status_code == 200, response.text
    assert placement.generation(gpu) == generation
    assert set(_counts(manage('devices', 'sync').stdout).values()) == {0}
    full = manage('devices', 'sync', '--full')
    assert full.returncode == 0, full.stderr
    assert _counts(full.stdout)['aggregate membership changes'] == 1
    helped = manage('devices', 'sync', '--help')
    assert 'not only those whose generation moved' in ' '.join(
        helped.stdout.split())
