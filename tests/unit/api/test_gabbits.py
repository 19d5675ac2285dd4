"""Declarative API tests (gabbi, as Placement writes them): every YAML file
in gabbits/ runs against the WSGI app with a fresh SQLite database.

Each file is one pytest test that runs its requests in order (gabbi's own
pytest plugin is not used: it takes every test id containing ':' for one
of its own, which breaks unrelated parametrized tests).
"""

import os
import shutil
import sys
import tempfile
import unittest

from gabbi import driver
from gabbi import fixture
import pytest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota.db import api as db_api
from tests import fixtures

GABBITS = os.path.join(os.path.dirname(__file__), 'gabbits')


class APIFixture(fixture.GabbiFixture):
    """A migrated, empty SQLite database for one YAML file."""

    def start_fixture(self):
        self.directory = tempfile.mkdtemp()
        fixtures.use_database('sqlite:///%s' % os.path.join(
            self.directory, 'api.sqlite'))

    def stop_fixture(self):
        CONF.clear_override('connection', 'database')
        db_api.reset()
        shutil.rmtree(self.directory)


class SmallBodyLimitFixture(fixture.GabbiFixture):
    """A 512-byte request body limit."""

    def start_fixture(self):
        CONF.set_override('max_request_body_size', 512, 'api')

    def stop_fixture(self):
        CONF.clear_override('max_request_body_size', 'api')


def _suites():
    """``{yaml file name: gabbi suite}``."""
    top = driver.build_tests(
        GABBITS, unittest.TestLoader(), intercept=app.setup_app,
        fixture_module=sys.modules[__name__], test_loader_name=__name__)
    return {type(next(iter(file_suite))).__name__.split('_', 1)[0]: file_suite
            for file_suite in top}


@pytest.mark.parametrize('name', sorted(
    os.path.splitext(name)[0] for name in os.listdir(GABBITS)
    if name.endswith('.yaml')))
def test_gabbits(name):
    suite = _suites()[name]
    result = unittest.TestResult()
    suite.run(result)
    failures = result.failures + result.errors
    assert not failures, '\n\n'.join(
        '%s\n%s' % (test, trace) for test, trace in failures)
    assert not result.skipped
    assert result.testsRun == suite.countTestCases() > 0
