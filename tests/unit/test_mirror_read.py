"""How the Placement mirror completes an incremental read from its copy
(``cloud.mirror_read.providers``), on plain values."""

import pytest

from cyquota.cloud import mirror_diff
from cyquota.cloud import mirror_read

P = mirror_diff.Provider
INV = {'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
       'step_size': 1, 'allocation_ratio': 1.0}


def _listed(**generations):
    """A root ``n``, its devices ``g`` and ``h``, and ``c``, a root with
    no inventory of a counted class."""
    parents = {'n': None, 'g': 'n', 'h': 'n', 'c': None}
    return {uuid: {'uuid': uuid, 'name': uuid, 'generation': generation,
                   'parent_provider_uuid': parents[uuid],
                   'root_provider_uuid': 'c' if uuid == 'c' else 'n'}
            for uuid, generation in generations.items()}


def _copy():
    return {'n': P('n', 'n', None, 'n', aggregates=frozenset({'a'})),
            'g': P('g', 'g', 'n', 'n', inventories={'GPU': INV},
                   traits=frozenset({'T'}), usage={('vm', 'GPU'): 1}),
            'h': P('h', 'h', 'n', 'n', inventories={'GPU': INV})}


SEEN = {'n': (1, False), 'g': (1, True), 'h': (1, False), 'c': (1, False)}


def test_a_full_reading_needs_no_copy():
    reading = mirror_read.Reading(
        _listed(n=1, g=1, h=1, c=1),
        inventories={'n': {}, 'g': {'GPU': INV}, 'h': {}, 'c': {}},
        aggregates={'n': frozenset({'a'}), 'g': frozenset()},
        traits={'n': frozenset(), 'g': frozenset({'T'})},
        usage={'g': {('vm', 'GPU'): 1}})
    found, record = mirror_read.providers(reading, {}, {})
    assert found == {'n': P('n', 'n', None, 'n', aggregates=frozenset({'a'})),
                     'g': P('g', 'g', 'n', 'n', inventories={'GPU': INV},
                            traits=frozenset({'T'}),
                            usage={('vm', 'GPU'): 1})}
    assert record == {'n': (1, False), 'g': (1, True), 'h': (1, False),
                      'c': (1, False)}


def test_unmoved_providers_come_from_the_copy_but_allocations_held():
    # Only g's allocations were read: the one that held some.
    reading = mirror_read.Reading(_listed(n=1, g=1, h=1, c=1),
                                  usage={'g': {}})
    found, record = mirror_read.providers(reading, SEEN, _copy())
    assert found == dict(_copy(), g=P('g', 'g', 'n', 'n',
                                      inventories={'GPU': INV},
                                      traits=frozenset({'T'})))
    assert record['g'] == (1, False)
    assert reading.requests() == 2


def test_a_moved_provider_is_read_and_a_new_ancestor_too():
    # h moved under c, a root never copied: h is read, and c's aggregates
    # and traits although its generation stayed.
    listed = _listed(n=1, g=1, h=2, c=1)
    listed['h'].update(parent_provider_uuid='c', root_provider_uuid='c')
    reading = mirror_read.Reading(
        listed, inventories={'h': {'GPU': dict(INV, total=2)}},
        aggregates={'h': frozenset(), 'c': frozenset({'b'})},
        traits={'h': frozenset(), 'c': frozenset()},
        usage={'g': {('vm', 'GPU'): 1}, 'h': {}})
    found, record = mirror_read.providers(reading, SEEN, _copy())
    assert found['c'] == P('c', 'c', None, 'c', aggregates=frozenset({'b'}))
    assert found['h'] == P('h', 'h', 'c', 'c',
                           inventories={'GPU': dict(INV, total=2)})
    assert found['g'] == _copy()['g']
    assert record == {'n': (1, False), 'g': (1, True), 'h': (2, False),
                      'c': (1, False)}


@pytest.mark.parametrize('reading', [
    # h's generation moved after the reading listed it (another sync
    # recorded 2): its inventories were not read.
    mirror_read.Reading(_listed(n=1, g=1, h=1, c=1), usage={'g': {}}),
    # g's allocations were not read, although it held some.
    mirror_read.Reading(_listed(n=1, g=1, h=2, c=1),
                        inventories={'h': {'GPU': INV}},
                        aggregates={'h': frozenset()},
                        traits={'h': frozenset()}, usage={'h': {}}),
])
def test_a_reading_that_lacks_something_is_overtaken(reading):
    with pytest.raises(mirror_read.Overtaken):
        mirror_read.providers(reading, dict(SEEN, h=(2, False)), _copy())
