"""The OpenStack client plugin speaks a microversion to a real
``cyquota-api`` (noauth): the newest both sides know unless the user pins
one with ``--os-accelerator-quota-api-version`` or its environment
variable, negotiated down from the version document when cyquota does not
serve the newest the commands know."""

from cyquota.api import microversion
from cyquota.osc import client
from tests.functional.test_osc import _json
from tests.functional.test_osc import as_role  # noqa: F401 (fixture)
from tests.functional.test_osc import migrated  # noqa: F401 (fixture)
from tests.functional.test_osc import noauth  # noqa: F401 (fixture)
from tests.functional.test_osc import openstack  # noqa: F401 (fixture)


def test_the_commands_know_the_servers_newest_version():
    assert client.KNOWN_VERSION == str(microversion.MAX_VERSION)


def test_by_default_the_newest_version_is_spoken(as_role):  # noqa: F811
    assert _json(as_role('admin')('accelerator', 'lease', 'list',
                                  '-f', 'json')) == []


def test_a_pinned_version_is_spoken(as_role):  # noqa: F811
    code, out, err = as_role('admin')(
        '--os-accelerator-quota-api-version', '1.2',
        'accelerator', 'lease', 'list')
    assert code == 1
    assert 'HTTP 404 cyquota.not_found' in err, err


def test_the_environment_pins_it_too(as_role, monkeypatch):  # noqa: F811
    monkeypatch.setenv('OS_ACCELERATOR_QUOTA_API_VERSION', '1.6')
    code, out, err = as_role('admin')('accelerator', 'quota', 'refusal',
                                      'list')
    assert code == 1
    assert 'HTTP 404 cyquota.not_found' in err, err


def test_a_version_cyquota_does_not_serve_is_its_406(as_role):  # noqa: F811
    code, out, err = as_role('admin')(
        '--os-accelerator-quota-api-version', '1.99',
        'accelerator', 'lease', 'list')
    assert code == 1
    assert ('Version 1.99 of accelerator-quota is not served: this API '
            'serves 1.0 to %s. (HTTP 406 cyquota.unsupported_version'
            % str(microversion.MAX_VERSION)) in err, err


def test_a_malformed_version_stops_the_command(as_role):  # noqa: F811
    code, out, err = as_role('admin')(
        '--os-accelerator-quota-api-version', '1.x',
        'accelerator', 'lease', 'list')
    assert code == 1
    assert ("Invalid --os-accelerator-quota-api-version '1.x': 1 (the "
            "newest version both sides know) or 1.Y.") in err, err


def test_newer_commands_negotiate_down(as_role, monkeypatch):  # noqa: F811
    # Commands that know a version this cyquota does not serve yet: the
    # first call's 406 sends them to the version document.
    monkeypatch.setattr(client, 'KNOWN_VERSION', '1.99')
    assert _json(as_role('admin')('accelerator', 'lease', 'list',
                                  '-f', 'json')) == []
