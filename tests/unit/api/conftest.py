"""Fixtures of the API unit tests."""

import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF


@pytest.fixture
def keystone_auth(sqlite_db):
    """The app under ``[api] auth_strategy = keystone``, whose tokens no
    keystone at ``http://127.0.0.1:5000/v3`` will ever check."""
    CONF.set_override('auth_strategy', 'keystone', 'api')
    CONF.set_override('www_authenticate_uri', 'http://127.0.0.1:5000/v3',
                      'keystone_authtoken')
    yield webtest.TestApp(app.setup_app())
    CONF.clear_override('auth_strategy', 'api')
    CONF.clear_override('www_authenticate_uri', 'keystone_authtoken')
