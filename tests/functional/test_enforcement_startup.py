"""Every cyquota service refuses to start on an enforcement configuration
it cannot enforce, with one line naming the fault."""

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

BIN = pathlib.Path(sys.executable).parent


def _start(tmp_path, command, config):
    config_file = tmp_path / 'cyquota.conf'
    config_file.write_text(config)
    return subprocess.run(
        [str(BIN / command), '--config-file', str(config_file)],
        cwd=tmp_path, capture_output=True, text=True, timeout=90)


@pytest.mark.parametrize('command', ['cyquota-api', 'cyquota-all-in-one',
                                     'cyquota-conductor'])
def test_an_unknown_filter_stops_the_service(tmp_path, command):
    result = _start(tmp_path, command, '[enforcement]\nenabled_filters = '
                    'MaxLeaseDurationFilter, NoSuchFilter\n')
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (
        "%s: Unknown usage enforcement filter 'NoSuchFilter' in "
        "[enforcement] enabled_filters: no entry point of that name in the "
        "cyquota.enforcement.filters group (installed: "
        "ExternalServiceFilter, MaxLeaseDurationFilter, "
        "MaximumReservationLengthFilter)" % command)
    assert 'Traceback' not in result.stderr + result.stdout
    assert not (tmp_path / 'cyquota.sqlite').exists()


def test_an_external_filter_without_endpoint_stops_the_service(tmp_path):
    result = _start(tmp_path, 'cyquota-api', '[enforcement]\n'
                    'enabled_filters = ExternalServiceFilter\n')
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith(
        'cyquota-api: ExternalServiceFilter is enabled but has no endpoint')
    assert 'Traceback' not in result.stderr + result.stdout
