"""Configuration shared by every test: cyquota's CONF parsed with no files,
and a fresh SQLite database per unit test."""

import pytest

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from tests import fixtures

CONF([], project='cyquota', default_config_files=[])


@pytest.fixture(autouse=True)
def _clean_conf():
    yield
    CONF.clear_override('connection', 'database')
    for group in ('quota',):
        for name in list(CONF[group]):
            CONF.clear_override(name, group)


@pytest.fixture
def ctx():
    return cyquota_context.get_admin_context()


@pytest.fixture
def sqlite_db(tmp_path):
    """A migrated SQLite file database for one test."""
    url = 'sqlite:///%s' % (tmp_path / 'cyquota.sqlite')
    fixtures.use_database(url)
    return url
