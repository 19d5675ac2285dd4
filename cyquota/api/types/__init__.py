"""WSME types of the API's answers, one module per resource.

A request body is described only by its JSON schema
(``cyquota.api.schemas``), which ``validation.json_body`` checks. An
answer is built as a type and rendered with ``to_json()``: the type
declares which keys an answer has, in which order, and (``base.Field``)
which may be null or absent; the OpenAPI document's answers are generated
from these types.

``base`` holds the common base class, ``attributes`` the date and time
type that WSME does not have.
"""
