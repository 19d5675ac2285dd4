"""Which resource classes the ledger counts."""

import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota.quota import resources


def test_builtin_and_configured_classes():
    CONF.set_override('resources', ['VGPU', 'CUSTOM_FPGA_XILINX', 'PGPU'],
                      'quota')
    assert resources.known_resources() == (
        'FPGA', 'GPU', 'CUSTOM_FPGA_XILINX', 'PGPU', 'VGPU')


@pytest.mark.parametrize('name', ['CUSTOM_', 'CUSTOM_a-b', 'custom_X',
                                  'MEMORY', 'GPU2'])
def test_bad_configured_class_is_refused(name):
    CONF.set_override('resources', [name], 'quota')
    with pytest.raises(exception.Invalid, match=name):
        resources.known_resources()


def test_unknown_resource_names_the_known_ones():
    with pytest.raises(exception.UnknownResource) as error:
        resources.check_resource('TPU')
    assert str(error.value) == ("Unknown resource 'TPU'; known resources: "
                                "FPGA, GPU.")
