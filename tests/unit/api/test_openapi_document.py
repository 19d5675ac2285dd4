"""The OpenAPI document is generated: the committed openapi.yaml is the
generator's output, valid OpenAPI 3, and the WSME request types it does not
read declare the same fields as the JSON schemas it does."""

import openapi_spec_validator
import pytest
from wsme import types as wtypes
import yaml

from cyquota.api.controllers.v1 import openapi
from cyquota.api.openapi_document import document
from cyquota.api.openapi_document import wsme_schema
from cyquota.api.schemas import lease as lease_schemas
from cyquota.api.schemas import limit as limit_schemas
from cyquota.api.schemas import reservation as reservation_schemas
from cyquota.api.types import base
from cyquota.api.types import lease as lease_types
from cyquota.api.types import limit as limit_types
from cyquota.api.types import project as project_types
from cyquota.api.types import registered_limit as registered_types
from cyquota.api.types import reservation as reservation_types


def test_the_committed_document_is_current():
    assert document.PATH.read_text(encoding='utf-8') == document.render(), (
        '%s is out of date: run "tox -e genopenapi" (python -m '
        'cyquota.api.openapi_document)' % document.PATH)


def test_the_served_document_is_the_generated_one():
    assert openapi.document() == yaml.safe_load(document.render())


def test_the_document_is_valid_openapi():
    openapi_spec_validator.validate(document.build())


@pytest.mark.parametrize('datatype, schema', [
    (lease_types.CreateRequest, lease_schemas.POST_LEASE),
    (lease_types.UpdateRequest, lease_schemas.PUT_LEASE),
    (limit_types.LimitRequest, limit_schemas.PUT_LIMIT),
    (registered_types.RegisteredLimitRequest,
     limit_schemas.PUT_REGISTERED_LIMIT),
    (project_types.ProjectRequest, limit_schemas.PUT_PROJECT),
    (reservation_types.ReserveRequest, reservation_schemas.POST_RESERVATION),
    (reservation_types.FinishRequest,
     reservation_schemas.FINISH_RESERVATIONS),
])
def test_a_request_type_declares_its_schemas_fields(datatype, schema):
    _same_fields(datatype, schema, datatype.__name__)


def _same_fields(datatype, schema, where):
    """The fields of the WSME complex type ``datatype`` are the properties
    of ``schema``, mandatory where it requires them, recursively."""
    attributes = {a.name: a for a in wtypes.list_attributes(datatype)}
    assert list(attributes) == list(schema['properties']), where
    assert {name for name, a in attributes.items() if a.mandatory} == set(
        schema.get('required', ())), where
    for name, attribute in attributes.items():
        inner, part = attribute.datatype, schema['properties'][name]
        if isinstance(inner, wtypes.ArrayType):
            inner, part = inner.item_type, part['items']
        if wtypes.iscomplex(inner):
            _same_fields(inner, part, '%s.%s' % (where, name))


class _Thing(base.APIBase):
    """A thing."""

    name = base.Field(wtypes.text, nullable=True, description='Its name.')
    size = base.Field(int, optional=True, schema={'minimum': 0})
    tags = [wtypes.text]


def test_a_field_says_what_may_be_null_or_absent():
    components = wsme_schema.Components()
    assert components.schema_of(wtypes.ArrayType(_Thing)) == {
        'type': 'array', 'items': {'$ref': '#/components/schemas/_Thing'}}
    assert components.schemas['_Thing'] == {
        'type': 'object', 'description': 'A thing.',
        'required': ['name', 'tags'],
        'properties': {
            'name': {'type': ['string', 'null'], 'description': 'Its name.'},
            'size': {'type': 'integer', 'minimum': 0},
            'tags': {'type': 'array', 'items': {'type': 'string'}}}}


def test_two_types_of_one_name_are_refused():
    other = type('_Thing', (base.APIBase,), {'colour': wtypes.text})
    components = wsme_schema.Components()
    components.schema_of(_Thing)
    with pytest.raises(ValueError, match='two types are named _Thing'):
        components.schema_of(other)
