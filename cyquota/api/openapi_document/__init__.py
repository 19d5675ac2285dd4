"""The OpenAPI 3 document of the REST API (``cyquota/api/openapi.yaml``),
generated: request bodies from their JSON schemas and query parameters
from their declarations (``cyquota.api.schemas``: what the API reads
requests with), answers from their WSME types (``cyquota.api.types``), the
rest (paths, Placement-shaped and error bodies) from ``components`` and
the ``paths_*`` modules. ``python -m cyquota.api.openapi_document`` (``tox
-e genopenapi``) writes the file; a unit test checks it is current.
"""
