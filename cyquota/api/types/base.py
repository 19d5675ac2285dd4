"""``APIBase``: the WSME complex type every body and part of a body is;
``Field``: an attribute of an answer that may be null or absent."""

import inspect

import wsme
from wsme.rest import json as wsme_json
from wsme import types as wtypes


#: JSON Schema keywords of a limit (-1 is unlimited) and of a count, for
#: ``Field(schema=...)``.
LIMIT = {'minimum': -1}
COUNT = {'minimum': 0}


def _from_value(datatype, value):
    """``value`` (the engine's plain data) as ``datatype``."""
    if value is None:
        return None
    if wtypes.iscomplex(datatype):
        return datatype.from_dict(value)
    if isinstance(datatype, wtypes.ArrayType):
        return [_from_value(datatype.item_type, item) for item in value]
    if isinstance(datatype, wtypes.DictType):
        return {key: _from_value(datatype.value_type, item)
                for key, item in value.items()}
    return value


def _is_attribute(name, value):
    """Whether WSME makes class attribute ``name`` an attribute of the
    type (as ``wsme.types.inspect_class`` chooses them)."""
    return (not name.startswith('_') and wtypes.iswsattr(value)
            and not inspect.isroutine(value))


class Field(wsme.wsattr):
    """An attribute of an answer, with what its WSME type does not say and
    the OpenAPI document (``cyquota.api.openapi_document``) shows.

    An answer's attribute is always present and never null unless it is a
    ``Field`` that says otherwise: ``nullable`` (it may be null),
    ``optional`` (it may be absent). ``description`` explains it, and
    ``schema`` adds JSON Schema keywords the type cannot carry (a
    ``format``, a ``minimum``). Rendering is WSME's, unchanged.
    """

    def __init__(self, datatype, nullable=False, optional=False,
                 description=None, schema=None):
        super().__init__(datatype)
        self.nullable = nullable
        self.optional = optional
        self.description = description
        self.schema = dict(schema or {})


class APIBase(wtypes.Base):
    """A JSON object of the API.

    Attributes render in the order the class declares them, which is the
    order of the keys in the JSON. An
    attribute set to None renders as null; one never set (``Unset``) is
    left out of the JSON.
    """

    def __init_subclass__(cls, **kwargs):
        # WSME reads the order from the source unless told it (a class's
        # own _wsme_attr_order), parsing the module again for each class:
        # a quarter of a second of every API start. The class's namespace
        # keeps the order it declares.
        super().__init_subclass__(**kwargs)
        if '_wsme_attr_order' in vars(cls):
            return
        declared = dict.fromkeys(name for klass in cls.__mro__
                                 for name in vars(klass))
        cls._wsme_attr_order = [name for name in declared
                                if _is_attribute(name, getattr(cls, name))]

    @classmethod
    def from_dict(cls, data):
        """A body from the engine's ``data``: the keys this type declares,
        nested types converted; other keys (a row's id, say) stay out."""
        body = cls()
        for attribute in wtypes.list_attributes(cls):
            if attribute.name in data:
                setattr(body, attribute.key, _from_value(
                    attribute.datatype, data[attribute.name]))
        return body

    def to_json(self):
        """The body as JSON-ready data (dicts, lists, strings, numbers)."""
        return wsme_json.tojson(type(self), self)
