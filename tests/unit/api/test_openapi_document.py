"""The OpenAPI document is generated: the committed openapi.yaml is the
generator's output and valid OpenAPI 3."""

import openapi_spec_validator
import pytest
from wsme import types as wtypes
import yaml

from cyquota.api.controllers.v1 import openapi
from cyquota.api.openapi_document import document
from cyquota.api.openapi_document import wsme_schema
from cyquota.api.types import base


def test_the_committed_document_is_current():
    assert document.PATH.read_text(encoding='utf-8') == document.render(), (
        '%s is out of date: run "tox -e genopenapi" (python -m '
        'cyquota.api.openapi_document)' % document.PATH)


def test_the_served_document_is_the_generated_one():
    assert openapi.document() == yaml.safe_load(document.render())


def test_the_document_is_valid_openapi():
    openapi_spec_validator.validate(document.build())


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
