"""``GET /v1/openapi.json``: the OpenAPI 3 document of the whole API
(``cyquota/api/openapi.yaml``), as JSON."""

import functools
import importlib.resources

import pecan
import yaml


@functools.cache
def document():
    """The API's OpenAPI document, parsed."""
    text = importlib.resources.files('cyquota.api').joinpath(
        'openapi.yaml').read_text(encoding='utf-8')
    return yaml.safe_load(text)


class OpenAPIController:

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return document()
