"""WSME types of the API's JSON bodies, one module per resource.

A request body comes in through ``validation.typed_body(Type, schema)``:
the JSON schema gate first (it refuses wrong JSON types, naming the field),
then ``wsme.rest.json.fromjson`` makes it an instance of ``Type``, whose
attribute types refuse what a schema cannot say. A response body is built
as a type and rendered with ``to_json()``: the type declares which keys an
answer has, in which order, and (``base.Field``) which may be null or
absent; the OpenAPI document's answers are generated from these types.

``base`` holds the common base class, ``attributes`` the attribute types
that WSME does not have (a date and time with its UTC offset, an integer
passed on as sent, any JSON value).
"""
