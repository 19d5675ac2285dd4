"""The parts of an operation of the OpenAPI document: its request body,
answers and query parameters, each said in one call."""

_ERROR = {'$ref': '#/components/responses/Error'}
NO_CONTENT = {'$ref': '#/components/responses/NoContent'}


def body(schema, example=None):
    """A required JSON request body checked against ``schema`` (one of
    ``cyquota.api.schemas``)."""
    media = {'schema': schema}
    if example is not None:
        media['example'] = example
    return {'required': True, 'content': {'application/json': media}}


def answer(description, schema=None, headers=None):
    """An answer described by ``description``, with a JSON body of
    ``schema`` when it has one."""
    found = {'description': description}
    if headers:
        found['headers'] = headers
    if schema is not None:
        found['content'] = {'application/json': {'schema': schema}}
    return found


def answers(ok, *errors, **others):
    """``{status: answer}``: ``ok`` (``{status: answer}``), then the error
    statuses ``errors`` (the shared error answer) and ``others``
    (``s403=answer``, an error answered with its own description)."""
    found = dict(ok)
    for status in sorted(set(errors) | {int(k[1:]) for k in others}):
        found[str(status)] = others.get('s%d' % status, _ERROR)
    return found


def query(parameters):
    """The query parameters of a GET, from their declaration (a tuple of
    ``cyquota.api.query.Parameter``, which the API reads them with)."""
    found = []
    for declared in parameters:
        shown = {'name': declared.name, 'in': 'query'}
        if declared.description:
            shown['description'] = declared.description
        if declared.repeated:
            shown.update(schema={'type': 'array', 'items': declared.schema},
                         style='form', explode=True)
        else:
            shown['schema'] = declared.schema
        found.append(shown)
    return found


def parameter(name):
    """A ``$ref`` to the shared parameter ``name``."""
    return {'$ref': '#/components/parameters/%s' % name}


def error_document(description):
    """An error answer with its own ``description`` (a 403 that may be
    over quota, say)."""
    return answer(description, {'$ref': '#/components/schemas/'
                                        'ErrorDocument'})
