"""The JSON schemas are the only description of a request: integers are
strict, and the bounds are the engine's own constants."""

import pytest

from cyquota.api.schemas import lease as lease_schemas
from cyquota.api.schemas import limit as limit_schemas
from cyquota.api import validation
from cyquota.db import models
from cyquota import exception
from cyquota.leases import request


@pytest.mark.parametrize('value', [2.0, True, '2', None])
def test_an_integer_is_a_json_integer_and_nothing_else(value):
    with pytest.raises(exception.InvalidBody) as refused:
        validation.check(limit_schemas.PUT_LIMIT, {'resource_limit': value})
    assert refused.value.message == (
        "JSON does not validate: %r is not of type 'integer' (field: "
        'resource_limit)' % (value,))


def test_a_big_integer_is_an_integer():
    # Refused for its size, not its type.
    with pytest.raises(exception.InvalidBody, match='greater than'):
        validation.check(limit_schemas.PUT_LIMIT,
                         {'resource_limit': 10 ** 30})


def _lease(name='n', amount=1, member_key=None):
    return {'lease': {'name': name, 'end_date': 'e', 'reservations': [
        {'resource_type': 'accelerator:FPGA', 'amount': amount,
         'member_key': member_key}]}}


def test_a_lease_at_its_bounds_is_taken():
    longest = 'n' * request.MAX_NAME_LENGTH
    validation.check(lease_schemas.POST_LEASE, _lease(
        name=longest, amount=request.MAX_AMOUNT, member_key=longest))
    validation.check(lease_schemas.POST_LEASE, _lease(amount=1))


@pytest.mark.parametrize('lease, field', [
    (_lease(name=''), 'lease.name'),
    (_lease(name='n' * (request.MAX_NAME_LENGTH + 1)), 'lease.name'),
    (_lease(member_key=''), 'lease.reservations.0.member_key'),
    (_lease(member_key='k' * (request.MAX_NAME_LENGTH + 1)),
     'lease.reservations.0.member_key'),
    (_lease(amount=0), 'lease.reservations.0.amount'),
    (_lease(amount=request.MAX_AMOUNT + 1), 'lease.reservations.0.amount'),
])
def test_a_lease_past_its_bounds_is_refused_naming_the_field(lease, field):
    with pytest.raises(exception.InvalidBody) as refused:
        validation.check(lease_schemas.POST_LEASE, lease)
    assert refused.value.message.endswith('(field: %s)' % field)


@pytest.mark.parametrize('value', [-1, 0, models.MAX_COUNT])
def test_a_limit_at_its_bounds_is_taken(value):
    validation.check(limit_schemas.PUT_REGISTERED_LIMIT,
                     {'default_limit': value})
