"""``openstack accelerator quota refusal list`` against a real
``cyquota-api`` (noauth): the binds refused over quota, found by the
consumer (a Nova instance uuid) or the project, as a table and as JSON; a
project's member sees its own project's only."""

import requests

from tests.functional.test_osc import _admin_call
from tests.functional.test_osc import _json
from tests.functional.test_osc import as_role  # noqa: F401 (fixture)
from tests.functional.test_osc import migrated  # noqa: F401 (fixture)
from tests.functional.test_osc import noauth  # noqa: F401 (fixture)
from tests.functional.test_osc import openstack  # noqa: F401 (fixture)

VM1 = '0b8ac5a6-5f3c-4ad4-a8b8-6e1b3e4f7c21'
VM2 = '1c9bd6b7-6a4d-4be5-b9c9-7f2c4f5a8d32'


def _bind(server, project, consumer):
    """What Cyborg's filter sends for an ARQ's bind: a reserve of one
    FPGA for the instance; the status it got."""
    return requests.post(server.url + '/v1/reservations', json={
        'project_id': project, 'deltas': {'FPGA': 1},
        'consumer_id': consumer, 'request_id': 'arq-%s' % consumer},
        headers={'X-Roles': 'service'}, timeout=30).status_code


def test_refusals_by_consumer_and_project(noauth, as_role):  # noqa: F811
    for project in ('refused-a', 'refused-b'):
        _admin_call(noauth, 'PUT', '/v1/projects/%s' % project, {})
        _admin_call(noauth, 'PUT', '/v1/limits/%s/FPGA' % project,
                    {'resource_limit': 0})
    assert _bind(noauth, 'refused-a', VM1) == 403
    assert _bind(noauth, 'refused-b', VM2) == 403

    admin = as_role('admin')
    code, out, err = admin('accelerator', 'quota', 'refusal', 'list',
                           '--consumer-id', VM1)
    assert (code, err) == (0, ''), err
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[1].split('|')[1:-1]] == [
        'ID', 'Project ID', 'Consumer ID', 'Request ID', 'Over', 'Budget',
        'Created At']
    # Each limit that refused on a line of its own (the server runs
    # strict-two-level: the project's and its tree's).
    rows = [[cell.strip() for cell in line.split('|')[1:-1]]
            for line in lines[3:-1]]
    assert [row[1:5] for row in rows] == [
        ['refused-a', VM1, 'arq-%s' % VM1,
         'FPGA: limit 0, used 0, reserved 0, requested 1 (project '
         'refused-a)'],
        ['', '', '', 'FPGA: limit 0, used 0, reserved 0, requested 1 (tree '
                     'refused-a)']]

    [found] = _json(admin('accelerator', 'quota', 'refusal', 'list',
                          '--project', 'refused-b', '-f', 'json'))
    assert (found['Consumer ID'], found['Request ID']) == (
        VM2, 'arq-%s' % VM2)
    assert found['Over'] == [{
        'project_id': 'refused-b', 'resource': 'FPGA', 'scope': scope,
        'limit': 0, 'used': 0, 'reserved': 0, 'requested': 1}
        for scope in ('project', 'tree')]

    member = as_role('member', 'refused-b')
    assert [r['Consumer ID'] for r in _json(member(
        'accelerator', 'quota', 'refusal', 'list', '-f', 'json'))] == [VM2]
    assert _json(member('accelerator', 'quota', 'refusal', 'list',
                        '--consumer-id', VM1, '-f', 'json')) == []
    code, out, err = member('accelerator', 'quota', 'refusal', 'list',
                            '--project', 'refused-a')
    assert (code, out) == (1, '')
    assert err.startswith('Policy does not allow cyquota:refusals:list to '
                          'be performed. (HTTP 403 cyquota.forbidden, ')


def test_a_refusal_by_a_budget_names_it(noauth, as_role):  # noqa: F811
    _admin_call(noauth, 'PUT', '/v1/projects/spent', {})
    _admin_call(noauth, 'PUT', '/v1/budgets/spent/FPGA', {'hours': 0})
    assert _bind(noauth, 'spent', VM1) == 403

    admin = as_role('admin')
    code, out, err = admin('accelerator', 'quota', 'refusal', 'list',
                           '--project', 'spent')
    assert (code, err) == (0, ''), err
    [row] = [[cell.strip() for cell in line.split('|')[1:-1]]
             for line in out.splitlines()[3:-1]]
    assert row[1:4] == ['spent', VM1, 'arq-%s' % VM1]
    assert row[4] == ''
    assert row[5].startswith('FPGA: 0.0 hour(s) left until ')
    assert row[5].endswith('T00:00:00+00:00 (project spent)')

    [found] = _json(admin('accelerator', 'quota', 'refusal', 'list',
                          '--project', 'spent', '-f', 'json'))
    assert found['Over'] == []
    assert {key: found['Budget'][key] for key in (
        'project_id', 'resource', 'balance_hours', 'requested_hours')} == {
        'project_id': 'spent', 'resource': 'FPGA', 'balance_hours': 0.0,
        'requested_hours': 0.0}
