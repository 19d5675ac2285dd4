"""schemathesis against a real ``cyquota-api`` process over HTTP on
PostgreSQL: the same checks as the in-process run
(``tests/unit/api/test_openapi_fuzz.py``), fewer examples, one server for
every operation. No answer may be a 5xx."""

import json

import hypothesis
import pytest
import requests
import schemathesis

from cyquota.api.controllers.v1 import openapi
from servers import api_server
from tests import commands
from tests import fixtures
from tests.functional import conftest
from tests.unit.api import test_openapi_fuzz

schema = schemathesis.openapi.from_dict(openapi.document())
schema.config.generation.update(
    modes=[schemathesis.GenerationMode.POSITIVE,
           schemathesis.GenerationMode.NEGATIVE])


@pytest.fixture(scope='module')
def postgresql_server(tmp_path_factory):
    """cyquota-api on a throw-away PostgreSQL database, migrated."""
    try:
        url = fixtures.create_database('postgresql')
    except Exception as error:  # any driver error: server not there
        conftest._unavailable('postgresql', error)
    server = api_server.ApiServer(
        url, directory=tmp_path_factory.mktemp('openapi-http'))
    try:
        commands.manage(server.config_file, 'db',
                        'sync').check_returncode()
        yield server.start()
    finally:
        server.stop()
        fixtures.drop_database(url)


@schema.parametrize()
@hypothesis.settings(
    max_examples=3, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))
def test_api_over_http_conforms_to_its_document(case, postgresql_server):
    case.call_and_validate(
        base_url=postgresql_server.url, headers=test_openapi_fuzz.ADMIN,
        checks=test_openapi_fuzz.CHECKS, timeout=30)


@pytest.mark.parametrize('text', ['a\x00b', '\ud800'])
def test_text_postgresql_cannot_store_is_a_400(postgresql_server, text):
    # Found by schemathesis: a NUL in an aggregate's metadata was a 500 on
    # PostgreSQL (SQLite stores it). An unpaired surrogate cannot be UTF-8.
    url = (postgresql_server.url
           + '/v1/aggregates/4f2c0b7e-4d2a-4d7e-9a53-0d6c8c1b7a10')
    body = json.dumps({'name': 'pool', 'metadata': {text: text}})
    answer = requests.put(url, data=body, timeout=30, headers=dict(
        test_openapi_fuzz.ADMIN, **{'Content-Type': 'application/json'}))
    assert answer.status_code == 400, answer.text
    assert answer.json()['errors'][0]['code'] == 'cyquota.invalid_body'
    assert requests.get(url, headers=test_openapi_fuzz.ADMIN,
                        timeout=30).status_code == 404
