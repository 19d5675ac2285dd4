"""``APIBase``: the WSME complex type every body and part of a body is."""

from wsme.rest import json as wsme_json
from wsme import types as wtypes


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


class APIBase(wtypes.Base):
    """A JSON object of the API.

    Attributes render in the order the class declares them (WSME reads it
    from the source), which is the order of the keys in the JSON. An
    attribute set to None renders as null; one never set (``Unset``) is
    left out of the JSON.

    A body also reads like the JSON object it came from, ``body['deltas']``
    and ``body.get('expire')`` (as oslo.versionedobjects' dict
    compatibility does for objects), so code written against the parsed
    JSON reads the typed body unchanged.
    """

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

    def __getitem__(self, name):
        value = self.get(name, wtypes.Unset)
        if value is wtypes.Unset:
            raise KeyError(name)
        return value

    def get(self, name, default=None):
        """The attribute ``name``, or ``default`` when it is not set."""
        for attribute in wtypes.list_attributes(type(self)):
            if attribute.name == name:
                value = getattr(self, attribute.key)
                return default if value is wtypes.Unset else value
        return default
