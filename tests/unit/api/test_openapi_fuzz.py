"""schemathesis: property-based requests generated from openapi.yaml, sent
to the app in-process (WSGI) as an admin on a fresh SQLite database per
operation, both valid data and data the document forbids (negative mode).
No response may be a 500, every response must be one the document allows
(status code, content type, headers and body schema), and data the
document forbids must be refused."""

import hypothesis
import schemathesis
from schemathesis import checks
from schemathesis import GenerationMode

from cyquota.api import app
from cyquota.api.controllers.v1 import openapi

ADMIN = {'X-Project-Id': 'admin-project', 'X-User-Id': 'admin',
         'X-Roles': 'admin'}
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance,
          checks.response_headers_conformance,
          checks.response_schema_conformance, checks.negative_data_rejection]
METHODS = ('get', 'put', 'post', 'delete', 'patch', 'head', 'options')

# Loaded from the document rather than with ``from_wsgi``, which leaves out
# the operation that serves the document (GET /v1/openapi.json).
schema = schemathesis.openapi.from_dict(openapi.document())
schema.app = app.setup_app()
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])


@schema.parametrize()
@hypothesis.settings(
    max_examples=15, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))
def test_api_conforms_to_its_document(case, sqlite_db):
    case.call_and_validate(headers=ADMIN, checks=CHECKS)


def document_operations():
    """``{"METHOD /path", ...}`` of every operation in openapi.yaml, read
    from the document itself rather than through schemathesis."""
    document = openapi.document()
    return {'%s %s' % (method.upper(), path)
            for path, item in document['paths'].items()
            for method in item if method in METHODS}


def test_every_operation_of_the_document_is_generated():
    generated = set()
    for result in schema.get_all_operations():
        generated.add(result.ok().label)  # an unusable operation raises
    assert generated == document_operations()
