"""An attribute type WSME does not have: a date and time with its UTC
offset."""

import datetime

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


DATETIME = DateTime()
