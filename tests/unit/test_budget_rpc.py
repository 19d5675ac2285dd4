"""The conductor's ``get_usage`` carries ``remaining_hours`` where a
budget is set, over the embedded in-process transport."""

from cyquota.budgets import books
from tests.unit import test_conductor

_conductor = test_conductor._conductor
api = test_conductor.api


def test_get_usage_carries_the_remaining_hours(api, ctx):
    books.set_budget(ctx, 'p1', 'GPU', 12.5)
    usage = api.get_usage(ctx, 'p1')
    assert usage['GPU']['remaining_hours'] == 12.5
    assert 'remaining_hours' not in usage['FPGA']
    assert 'remaining_hours' not in api.get_usage(ctx, 'p2')['GPU']
