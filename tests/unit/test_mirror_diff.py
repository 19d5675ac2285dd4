"""The pure comparison of the Placement mirror (``cloud.mirror_diff``)."""

from cyquota.cloud import mirror_diff

P = mirror_diff.Provider
INV = {'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
       'step_size': 1, 'allocation_ratio': 1.0}


def _tree():
    return {'n': P('n', 'node', None, 'n', aggregates=frozenset({'a'})),
            'g': P('g', 'gpu', 'n', 'n', inventories={'GPU': INV},
                   traits=frozenset({'T'}), usage={('vm', 'GPU'): 1})}


def test_the_same_is_no_change():
    changes = mirror_diff.diff(_tree(), _tree())
    assert not changes
    assert all(count == 0 for _, count in mirror_diff.summary_rows(changes))


def test_new_trees_come_parents_first_and_go_children_first():
    changes = mirror_diff.diff(_tree(), {})
    assert changes.added == ['n', 'g']
    assert changes.inventories == {'g': ({'GPU': INV}, [])}
    assert changes.usage == {'g': ({('vm', 'GPU'): 1}, [])}
    gone = mirror_diff.diff({}, _tree())
    assert gone.removed == ['g', 'n']
    # What Placement showed on a provider goes with it.
    assert gone.usage == {'g': ({}, [('vm', 'GPU')])}


def test_each_kind_of_change():
    now = _tree()
    now['g'] = P('g', 'gpu-renamed', 'n', 'n',
                 inventories={'GPU': dict(INV, total=2)},
                 aggregates=frozenset({'b'}), usage={('vm', 'GPU'): 2})
    changes = mirror_diff.diff(now, _tree())
    assert changes.moved == {'g': ('gpu-renamed', 'n', 'n')}
    assert changes.inventories == {'g': ({'GPU': dict(INV, total=2)}, [])}
    assert changes.aggregates == {'g': ({'b'}, set())}
    assert changes.traits == {'g': (set(), {'T'})}
    assert changes.usage == {'g': ({('vm', 'GPU'): 2}, [])}
    assert changes.touched() == {'g'}
    assert dict(mirror_diff.summary_rows(changes, kept=())) == {
        'providers added': 0, 'providers updated': 1,
        'providers removed': 0, 'providers kept (held)': 0,
        'inventory changes': 1, 'aggregate membership changes': 1,
        'trait changes': 1, 'usage changes': 1}


def test_cyquotas_own_consumers_are_left_out():
    tree = _tree()
    tree['g'] = P('g', 'gpu', 'n', 'n', usage={('vm', 'GPU'): 1,
                                               ('lease', 'GPU'): 2})
    assert mirror_diff.without_consumers(tree, {'lease'})['g'].usage == {
        ('vm', 'GPU'): 1}
