"""The OpenAPI document (cyquota/api/openapi.yaml) is the whole API: every
route the app serves is in it and nothing else, it is served, and its
schemas are valid JSON Schema."""

import inspect
import re

import jsonschema
import webtest

from cyquota.api import app
from cyquota.api.controllers import root
from cyquota.api.controllers.v1 import openapi

_CONTROLLERS = 'cyquota.api.controllers.'
_HTTP_METHODS = {'get', 'put', 'post', 'delete', 'patch', 'head', 'options'}


def _methods(controller):
    """The HTTP methods a pecan controller's generic ``index`` answers."""
    index = getattr(controller, 'index', None)
    handlers = getattr(index, '_pecan', {}).get('generic_handlers', {})
    return {method for method in handlers if method != 'DEFAULT'}


def _children(controller):
    """``(path segment, sub-controller)``: attributes (of the class or the
    instance) that are controllers, and what ``_lookup`` returns for
    placeholders named after its parameters."""
    names = set(dir(type(controller))) | set(vars(controller))
    for name in sorted(names):
        if name.startswith('_') or name == 'index':
            continue
        child = getattr(controller, name)
        if type(child).__module__.startswith(_CONTROLLERS):
            yield name, child
    lookup = getattr(controller, '_lookup', None)
    if lookup is not None:
        params = [p.name for p in inspect.signature(lookup).parameters
                  .values() if p.kind == p.POSITIONAL_OR_KEYWORD]
        child, _remainder = lookup(*('{%s}' % name for name in params))
        yield '/'.join('{%s}' % name for name in params), child


def routes(controller=None, path=''):
    """``{(path, METHOD)}`` of every route under ``controller``."""
    controller = controller or root.RootController()
    found = {(path or '/', method) for method in _methods(controller)}
    for segment, child in _children(controller):
        found |= routes(child, '%s/%s' % (path, segment))
    return found


def _pattern(path):
    return re.compile('^%s$' % re.sub(r'\\\{[^/]+\\\}', '[^/]+',
                                      re.escape(path)))


def _documented():
    return {(path, method.upper())
            for path, item in openapi.document()['paths'].items()
            for method in item if method in _HTTP_METHODS}


def test_every_route_is_documented():
    documented = _documented()
    patterns = [(_pattern(path), method) for path, method in documented]
    missing = sorted(
        (path, method) for path, method in routes()
        if not any(pattern.match(path) and method == doc_method
                   for pattern, doc_method in patterns))
    assert not missing, 'routes missing from openapi.yaml: %s' % missing


def test_every_documented_operation_is_a_route():
    served = routes()
    extra = sorted(
        (path, method) for path, method in _documented()
        if (path, method) not in served)
    assert not extra, 'openapi.yaml documents unserved routes: %s' % extra


def test_the_route_walk_sees_lookups_and_instance_attributes():
    found = routes()
    assert ('/v1/limits/{project_id}/{resource}', 'PUT') in found
    assert ('/v1/resource_providers/{uuid}/inventories', 'PUT') in found
    assert ('/v1/openapi.json', 'GET') in found
    assert not any(path == '/v1/projects' for path, _method in found)


def test_the_document_is_served(sqlite_db):
    response = webtest.TestApp(app.setup_app()).get('/v1/openapi.json')
    assert response.content_type == 'application/json'
    assert response.json == openapi.document()
    assert response.json['openapi'].startswith('3.')


def _objects(node):
    """Every JSON object nested in ``node``, ``node`` included."""
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for value in node:
            yield from _objects(value)


def test_the_schemas_are_valid_json_schema():
    document = openapi.document()
    schemas = list(document['components']['schemas'].values())
    schemas += [found['schema'] for found in _objects(document['paths'])
                if isinstance(found.get('schema'), dict)]
    assert len(schemas) > 40
    for schema in schemas:
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_reference_resolves():
    document = openapi.document()
    for ref in {found['$ref'] for found in _objects(document)
                if '$ref' in found}:
        node = document
        for part in ref.lstrip('#/').split('/'):
            node = node[part]
        assert isinstance(node, dict), ref
