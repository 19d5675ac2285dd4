"""The witness's comparison of the ledger with Placement's figures
(``cyquota.cloud.witness``): Placement's answers as they come, summed in
cyquota's resources, and compared with the ledger's counts."""

from oslo_config import cfg
import pytest

from cyquota.api import witness_gauges
from cyquota.cloud import witness
from cyquota.conductor import service as conductor_service
from cyquota.conf import CONF
from cyquota.conf import placement as placement_conf

MAPPED = {'PGPU': 'GPU', 'FPGA': 'FPGA'}


def test_usages_are_summed_by_resource_leases_apart():
    usages = {
        'INSTANCE': {'consumer_count': 3, 'PGPU': 2, 'FPGA': 1, 'VCPU': 8},
        'MIGRATION': {'consumer_count': 1, 'PGPU': 1},
        'unknown': {'consumer_count': 1, 'FPGA': 2},
        'CYQUOTA_LEASE': {'consumer_count': 1, 'PGPU': 4},
    }
    assert witness.counts_of(usages, MAPPED) == {
        'GPU': {'used': 3, 'leased': 4},
        'FPGA': {'used': 3, 'leased': 0}}
    assert witness.counts_of({}, MAPPED) == {}


def test_a_consumers_holdings_sum_its_providers_in_mapped_classes():
    allocations = {
        'rp-1': {'resources': {'PGPU': 1, 'VCPU': 2}, 'generation': 3},
        'rp-2': {'resources': {'PGPU': 2, 'FPGA': 1}, 'generation': 1},
        'rp-3': {'resources': {'MEMORY_MB': 512}, 'generation': 1},
    }
    assert witness.held_of(allocations, MAPPED) == {'GPU': 3, 'FPGA': 1}
    assert witness.held_of({'rp-3': allocations['rp-3']}, MAPPED) == {}


def test_agreeing_figures_have_no_difference():
    ledger = {('p1', 'GPU'): {'used': 3, 'leased': 1},
              ('p2', 'FPGA'): {'used': 0, 'leased': 0}}
    placement = {('p1', 'GPU'): {'used': 2, 'leased': 1}}
    assert witness.compare(ledger, placement) == []
    assert witness.compare(ledger, placement, leases=True) == []
    assert witness.compare({}, {}) == []


def test_differences_either_way_in_order():
    ledger = {('p1', 'GPU'): {'used': 3, 'leased': 1},
              ('p2', 'FPGA'): {'used': 2, 'leased': 0}}
    # p1's GPU: an instance the ledger never saw, and no lease written;
    # p2's FPGA: held in the ledger, not in Placement; p3: only there.
    placement = {('p1', 'GPU'): {'used': 3, 'leased': 0},
                 ('p3', 'GPU'): {'used': 1, 'leased': 0}}
    found = witness.compare(ledger, placement)
    assert found == [witness.Difference('p1', 'GPU', 'used', 2, 3),
                     witness.Difference('p2', 'FPGA', 'used', 2, 0),
                     witness.Difference('p3', 'GPU', 'used', 0, 1)]
    assert [d.difference for d in found] == [1, -2, 1]
    assert witness.compare(ledger, placement, leases=True) == [
        witness.Difference('p1', 'GPU', 'used', 2, 3),
        witness.Difference('p1', 'GPU', 'leased', 1, 0),
        witness.Difference('p2', 'FPGA', 'used', 2, 0),
        witness.Difference('p3', 'GPU', 'used', 0, 1)]


def test_a_lease_only_in_placement_is_no_use():
    placement = {('p1', 'GPU'): {'used': 0, 'leased': 2}}
    assert witness.compare({}, placement) == []
    assert witness.compare({}, placement, leases=True) == [
        witness.Difference('p1', 'GPU', 'leased', 0, 2)]


def _conf(tmp_path, text):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    path = tmp_path / 'cyquota.conf'
    path.write_text('[placement]\n' + text)
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    return conf


@pytest.mark.parametrize('text, message', [
    ('', '[placement] auth_type: not set: Keystone credentials are needed '
         '(for example auth_type = password)'),
    ('auth_type = admin_token\nendpoint = http://127.0.0.1:9\n'
     'class_map = GPU:NOT_A_CLASS\n',
     "[placement] class_map: 'NOT_A_CLASS' (for GPU) is not a Placement "
     'resource class (a standard class or CUSTOM_[A-Z0-9_]+)'),
    ('auth_type = password\n',
     '[placement] auth_url: not set (auth_type password needs the Keystone '
     'endpoint)'),
    ('auth_type = no-such-plugin\n',
     "[placement] auth_type: no keystoneauth plugin named 'no-such-plugin'"),
])
def test_options_that_cannot_reach_placement_say_which(tmp_path, text,
                                                       message):
    with pytest.raises(witness.Unusable) as raised:
        witness.Witness.from_conf(_conf(tmp_path, text))
    assert str(raised.value) == message


def test_options_that_load_make_a_witness(tmp_path):
    found = witness.Witness.from_conf(_conf(
        tmp_path, 'auth_type = admin_token\nendpoint = http://127.0.0.1:9\n'
                  'token = x\nclass_map = GPU:PGPU\n'))
    assert found.mapped == {'PGPU': 'GPU', 'FPGA': 'FPGA'}


def test_the_periodic_witness_runs_in_placement_mode_unless_turned_off(
        sqlite_db):
    def tasks():
        return [task.__name__ for task, _, _
                in conductor_service._periodic_tasks('unit-conductor')]

    assert 'check_placement_witness' not in tasks()
    assert witness_gauges.WitnessCollector().collect() == []
    CONF.set_override('source', 'placement', 'placement')
    try:
        assert 'check_placement_witness' in tasks()
        [never] = witness_gauges.WitnessCollector().collect()
        assert (never.name, never.samples[0].value) == (
            'cyquota_placement_witness_last_run_timestamp_seconds', 0)
        CONF.set_override('witness_interval', 0, 'placement')
        assert 'check_placement_witness' not in tasks()
        assert witness_gauges.WitnessCollector().collect() == []
    finally:
        CONF.clear_override('source', 'placement')
        CONF.clear_override('witness_interval', 'placement')
