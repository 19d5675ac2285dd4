"""Tests on the OpenStack test bed (``tests.functional.openstack_bed``):
one bed a session, started by the first test that asks for it (minutes
with the virtualenvs cached, more while they are built). Their modules
carry the marker ``openstack_bed``: ``-m 'not openstack_bed'`` leaves them
out."""

import pytest

from tests.functional.openstack_bed import bed as openstack_bed


@pytest.fixture(scope='session')
def bed():
    """The running ``Bed`` (one compute host, no cyquota filter), torn
    down at the end of the session."""
    with openstack_bed.Bed() as running:
        yield running
