"""WSME types as JSON Schema: each complex type one schema of
``components/schemas``, named after its class, described by its docstring.

A complex type's attributes are its properties, in their declared order;
each is required and not null unless a ``base.Field`` says otherwise.
"""

import inspect

from wsme import types as wtypes

from cyquota.api.types import base

_NATIVE = {str: 'string', int: 'integer', bool: 'boolean', float: 'number'}


def reference(name):
    """A JSON Schema ``$ref`` to the component schema ``name``."""
    return {'$ref': '#/components/schemas/%s' % name}


class Components:
    """The component schemas of the complex types met so far."""

    def __init__(self):
        self.schemas = {}
        self._types = {}

    def schema_of(self, datatype):
        """The JSON Schema of ``datatype``: a ``$ref`` for a complex type
        (registered in ``schemas`` on first sight)."""
        if wtypes.iscomplex(datatype):
            return reference(self._register(datatype))
        if isinstance(datatype, wtypes.ArrayType):
            return {'type': 'array',
                    'items': self.schema_of(datatype.item_type)}
        if isinstance(datatype, wtypes.DictType):
            return {'type': 'object',
                    'additionalProperties': self.schema_of(
                        datatype.value_type)}
        if isinstance(datatype, wtypes.Enum):
            return {'type': _NATIVE[datatype.basetype],
                    'enum': sorted(datatype.values)}
        if isinstance(datatype, wtypes.UserType):
            return dict(getattr(datatype, 'json_schema', None)
                        or {'type': _NATIVE[datatype.basetype]})
        return {'type': _NATIVE[datatype]}

    def _register(self, datatype):
        name = datatype.__name__
        known = self._types.get(name)
        if known is not None and known is not datatype:
            raise ValueError('two types are named %s: %r and %r'
                             % (name, known, datatype))
        if known is None:
            self._types[name] = datatype
            # Registered before its attributes: a type may nest itself.
            self.schemas[name] = None
            self.schemas[name] = self._object(datatype)
        return name

    def _object(self, datatype):
        schema = {'type': 'object'}
        if datatype.__doc__:
            schema['description'] = inspect.cleandoc(datatype.__doc__)
        properties, required = {}, []
        for attribute in wtypes.list_attributes(datatype):
            properties[attribute.name] = self._property(attribute)
            if not getattr(attribute, 'optional', False):
                required.append(attribute.name)
        if required:
            schema['required'] = required
        schema['properties'] = properties
        return schema

    def _property(self, attribute):
        schema = self.schema_of(attribute.datatype)
        if isinstance(attribute, base.Field):
            schema.update(attribute.schema)
            if attribute.nullable:
                schema = _nullable(schema)
            if attribute.description:
                schema['description'] = attribute.description
        return schema


def _nullable(schema):
    """``schema``, or null."""
    if '$ref' in schema or 'type' not in schema:
        return {'anyOf': [schema, {'type': 'null'}]}
    return dict(schema, type=[schema['type'], 'null'])
