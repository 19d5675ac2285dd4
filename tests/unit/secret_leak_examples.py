"""Tests that leak a secret, for test_secret_check.py to run: the
suite-wide check must fail the first two (not collected by name)."""

import logging

import pytest

from cyquota.conf import CONF

TOKEN = 'tok-example-b7f0-leak'


@pytest.fixture
def token():
    CONF.set_override('token', TOKEN, 'enforcement_external')
    yield TOKEN
    CONF.clear_override('token', 'enforcement_external')


def test_logs_the_configured_token(token):
    logging.getLogger('cyquota.example').warning('calling with %s', token)


def test_prints_a_known_password():
    print('connecting with s3cret-pw')


def test_shows_no_secret(token):
    logging.getLogger('cyquota.example').warning('calling with a token')
