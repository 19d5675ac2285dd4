"""The witness finds what the books missed in a real cloud (SPEC 3.7): a
server in ERROR keeps its Placement allocation, which no bind counted;
the conductor's periodic witness counts the drift, the operator repairs
it with ``quota sync --from-placement``."""

import pytest

from tests.functional.openstack import books

pytestmark = [pytest.mark.openstack_bed, pytest.mark.timeout(1800)]

DRIFT = 'cyquota_placement_drift'


def _drift(bed):
    return books.metric(bed, DRIFT, resource='FPGA', field='used')


def test_an_error_servers_allocation_is_found_and_repaired(bed,
                                                           fpga_profile):
    project = books.demo_project(bed)
    server = books.boot_refused_at_bind(bed, fpga_profile)
    assert server['status'] == 'ERROR'
    held = bed.allocations(server['id'])
    assert [a['resources'].get('FPGA') for a in held.values()
            if 'FPGA' in a['resources']] == [1]

    check = books.manage(bed, 'quota', 'check', '--against-placement',
                         '--project', project)
    assert check.returncode == 1, check.stdout + check.stderr
    assert project in check.stdout and 'FPGA' in check.stdout
    bed.wait('the witness counting the drift', lambda: _drift(bed) == 1, 60)

    repair = books.manage(bed, 'quota', 'sync', '--from-placement',
                          '--project', project)
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert books.manage(bed, 'quota', 'check', '--against-placement',
                        '--project', project).returncode == 0
    bed.wait('the witness seeing no drift', lambda: _drift(bed) == 0, 60)

    # Its delete frees Placement's allocation; the repair follows it again.
    bed.delete_server(server['id'])
    assert books.manage(bed, 'quota', 'sync', '--from-placement',
                        '--project', project).returncode == 0
    assert books.manage(bed, 'quota', 'check', '--against-placement',
                        '--project', project).returncode == 0
