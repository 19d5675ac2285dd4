"""schemathesis: property-based requests generated from openapi.yaml, sent
to the app in-process (WSGI) as an admin on a fresh SQLite database per
operation. No response may be a 500, and every response must be one the
document allows: status code, content type, headers and body schema."""

import hypothesis
import schemathesis
from schemathesis import checks

from cyquota.api import app

ADMIN = {'X-Project-Id': 'admin-project', 'X-User-Id': 'admin',
         'X-Roles': 'admin'}
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance,
          checks.response_headers_conformance,
          checks.response_schema_conformance, checks.negative_data_rejection]

schema = schemathesis.openapi.from_wsgi('/v1/openapi.json', app.setup_app())


@schema.parametrize()
@hypothesis.settings(
    max_examples=15, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))
def test_api_conforms_to_its_document(case, sqlite_db):
    case.call_and_validate(headers=ADMIN, checks=CHECKS)
