"""Request bodies: JSON, checked against a JSON schema (as Placement does).

The schemas of ``cyquota.api.schemas`` are the only description of a
request: its shape, its JSON types and its bounds. The controllers read
the checked data as parsed; every error names the offending field.
Integers are strict: ``2.0`` is a number, not an integer, as ``"2"`` is a
string (JSON Schema since draft 6 would take it).
"""

import itertools
import json
import re

import jsonschema
from oslo_utils import uuidutils
import pecan

from cyquota import exception

_FORMATS = jsonschema.FormatChecker()
_FORMATS.checks('uuid')(uuidutils.is_uuid_like)


def _is_integer(_checker, instance):
    # bool is an int to Python, never to JSON.
    return isinstance(instance, int) and not isinstance(instance, bool)


_VALIDATOR_CLASS = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        'integer', _is_integer))

#: How deeply JSON may nest; the API's bodies need a handful of levels.
MAX_DEPTH = 32
# A string (its escapes taken out first), or the rest of the body after an
# unclosed quote: a match never fails, so no quote is tried twice and the
# scan is linear (a pattern that needs the closing quote tries again from
# every later quote of an unclosed one: a body of escaped quotes costs its
# length squared).
_STRINGS = re.compile(r'"[^"]*"?')
_NOT_BRACKETS = re.compile(r'[^][{}]+')
_STEPS = {'[': 1, '{': 1, ']': -1, '}': -1}


def check_depth(body):
    """Refuse (400) JSON nested deeper than ``MAX_DEPTH`` before anything
    decodes it: a decoder recurses once a level, and a body of 10,000
    brackets would exhaust the stack. Time linear in the body."""
    text = body.decode('utf-8', 'replace') if isinstance(body, bytes) \
        else body
    # Escaped backslashes, then escaped quotes (outside a string, a
    # backslash is malformed JSON anyway).
    text = text.replace('\\\\', '').replace('\\"', '')
    brackets = _NOT_BRACKETS.sub('', _STRINGS.sub('', text))
    opening = brackets.count('[') + brackets.count('{')
    if opening > MAX_DEPTH and max(itertools.accumulate(
            map(_STEPS.__getitem__, brackets))) > MAX_DEPTH:
        raise exception.InvalidBody(
            detail='Malformed JSON: nested deeper than %d levels'
                   % MAX_DEPTH)


# {id(schema): (schema, validator)}: checking a schema against its
# metaschema costs a hundred times what checking a body does, so each
# schema is checked and compiled once.
_VALIDATORS = {}


def _validator(schema):
    """The validator of ``schema`` (a module-level constant)."""
    found = _VALIDATORS.get(id(schema))
    if found is None or found[0] is not schema:
        _VALIDATOR_CLASS.check_schema(schema)
        found = _VALIDATORS[id(schema)] = (
            schema, _VALIDATOR_CLASS(schema, format_checker=_FORMATS))
    return found[1]


def _pairs(pairs):
    """An object of ``pairs``, refusing a key given twice (JSON allows it,
    and the last would silently win)."""
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError('duplicate key %r' % key)
        result[key] = value
    return result


def _check_text(value):
    """Refuse strings no database column can hold: PostgreSQL's text
    refuses NUL, and an unpaired surrogate (``"\\ud800"``) is no UTF-8."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, str):
        if '\x00' in value:
            raise ValueError('a string holds a NUL character (\\u0000)')
        try:
            value.encode('utf-8')
        except UnicodeEncodeError:
            raise ValueError('a string holds an unpaired surrogate')


def _refuse_constant(name):
    raise ValueError('%s is not valid JSON' % name)


def _where(error):
    path = '.'.join(str(part) for part in error.absolute_path)
    return ' (field: %s)' % path if path else ''


def json_body(schema):
    """The request's JSON body, validated against ``schema``.

    :raises UnsupportedMediaType: (415) the body is not application/json.
    :raises InvalidBody: (400) malformed JSON, or JSON the schema refuses.
    """
    request = pecan.request
    if request.content_type != 'application/json':
        raise exception.UnsupportedMediaType(
            media_type=request.content_type or 'None')
    try:
        data = json.loads(request.body, parse_constant=_refuse_constant,
                          object_pairs_hook=_pairs)
        _check_text(data)
    except (ValueError, RecursionError) as error:
        raise exception.InvalidBody(detail='Malformed JSON: %s' % error)
    check(schema, data)
    return data


def check(schema, data):
    """Refuse ``data`` (parsed JSON) unless ``schema`` takes it.

    :raises InvalidBody: (400) naming the field ``schema`` refuses.
    """
    error = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(data))
    if error is not None:
        raise exception.InvalidBody(detail='JSON does not validate: %s%s' % (
            error.message, _where(error)))

