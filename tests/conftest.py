"""Configuration shared by every test: cyquota's CONF parsed with no files,
a fresh SQLite database per unit test, and a check that no configured
secret shows in any log record or output a test captured
(``tests.secrets``)."""

import logging

import pytest

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from tests import fixtures
from tests import secrets

CONF([], project='cyquota', default_config_files=[])

_WATCH = secrets.LogWatch()


def pytest_configure(config):
    logging.getLogger().addHandler(_WATCH)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail a test phase whose log records or captured output show a
    secret."""
    report = (yield).get_result()
    texts = _WATCH.take() + [content for _, content in report.sections]
    found = secrets.leaked('\n'.join(texts))
    if found and not report.failed:
        report.outcome = 'failed'
        report.longrepr = ('secret(s) in the log or output of %s (%s): %s'
                           % (item.nodeid, report.when, found))


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
