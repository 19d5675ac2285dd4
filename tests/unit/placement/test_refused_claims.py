"""A device claim refused inside the ledger's transaction ends that
transaction once: no SQLAlchemy warning (the service would print it on
its stderr), nothing reserved, nothing held."""

import pytest

from cyquota.placement import device_errors
from cyquota import quota
from tests.unit.placement.test_ledger_devices import (  # noqa: F401
    _count, _held, devices)  # noqa: H301 (a fixture, by name)

Q = quota.QUOTAS

pytestmark = pytest.mark.filterwarnings('error::sqlalchemy.exc.SAWarning')


def test_no_device_fits(devices, ctx):  # noqa: F811 (the fixture)
    with pytest.raises(device_errors.NoValidAllocation):
        Q.reserve(ctx, 'p1', {'FPGA': 4}, consumer_id='vm1',
                  devices={'resources': 'FPGA:4'})
    assert _count('reservations') == 0
    assert _held(ctx, 'vm1') == {}


def test_the_consumer_already_holds_devices(devices, ctx):  # noqa: F811
    Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
              devices={'resources': 'FPGA:1'})
    with pytest.raises(device_errors.ConsumerExists):
        Q.reserve(ctx, 'p1', {'FPGA': 1}, consumer_id='vm1',
                  devices={'resources': 'FPGA:1'})
    assert _count('reservations') == 1
