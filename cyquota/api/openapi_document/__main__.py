"""``python -m cyquota.api.openapi_document``: write openapi.yaml."""

from cyquota.api.openapi_document import document

document.main()
