"""Attribute types WSME does not have: a date and time with its UTC
offset, an integer passed on as sent, and any JSON value."""

import datetime

from wsme.rest import json as wsme_json
from wsme import types as wtypes


class DateTime(wtypes.UserType):
    """A date and time, rendered in ISO 8601 with its UTC offset; a naive
    one is UTC, as the database keeps them."""

    basetype = wtypes.text
    name = 'datetime'
    #: What the OpenAPI document shows of it.
    json_schema = {'type': 'string', 'format': 'date-time'}

    def validate(self, value):
        if not isinstance(value, datetime.datetime):
            raise ValueError('expected a datetime, got %r' % (value,))
        return value

    def tobasetype(self, value):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()


class Integer(wtypes.UserType):
    """A JSON integer of a request, passed on as the client sent it.

    WSME's ``int`` converts (``2.0`` becomes ``2``), but the engine must see
    ``2.0`` to refuse it with the same error as on the Python and RPC
    interfaces. The JSON schema gate has already refused what is not an
    integral number.
    """

    basetype = int
    name = 'integer'

    def validate(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError('expected an integer, got %r' % (value,))
        return value


class Json(wtypes.UserType):
    """Any JSON value, passed on as parsed: for a part of a body whose form
    the JSON schema gate checks and whose meaning another layer reads
    (Placement's query parameters)."""

    basetype = wtypes.text
    name = 'json'


DATETIME = DateTime()
INTEGER = Integer()
JSON = Json()


@wsme_json.fromjson.when_object(INTEGER)
def _integer_fromjson(datatype, value):
    return value
