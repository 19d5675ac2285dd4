"""Both enforcement models and their scopes implement the protocols of
``limits.model`` member by member, and the limit cache in front of a source
answers every read and write of the source interface itself (the type
check, ``test_type_check``, holds the types)."""

import inspect

import pytest

from cyquota.quota import limits
from cyquota.quota.limits import cached_source
from cyquota.quota.limits import flat
from cyquota.quota.limits import model
from cyquota.quota.limits import source
from cyquota.quota.limits import tree_usage

PAIRS = [(model.EnforcementModel, implementation)
         for implementation in limits.MODELS.values()] + [
    (model.Scope, flat.FlatScope), (model.Scope, tree_usage.TreeUsage)]


def _members(protocol):
    return sorted(name for name in vars(protocol)
                  if not name.startswith('_')) + sorted(
        name for name in vars(protocol).get('__annotations__', {})
        if name != 'source')


def _parameters(function):
    return [(parameter.name, parameter.kind, parameter.default)
            for parameter in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize('protocol, implementation', PAIRS,
                         ids=lambda item: item.__name__)
def test_declared_against_the_protocol(protocol, implementation):
    assert protocol in implementation.__mro__


@pytest.mark.parametrize('protocol, implementation', PAIRS,
                         ids=lambda item: item.__name__)
def test_every_member_with_the_protocols_parameters(protocol,
                                                    implementation):
    for name in _members(protocol):
        declared = inspect.getattr_static(protocol, name, None)
        made = inspect.getattr_static(implementation, name)
        assert made is not declared, '%s.%s is the protocol\'s' % (
            implementation.__name__, name)
        if inspect.isfunction(declared):
            assert _parameters(made) == _parameters(declared), name


def test_models_are_instances_of_the_protocol():
    for make in limits.MODELS.values():
        assert isinstance(make(None), model.EnforcementModel)


def test_the_cache_answers_the_whole_source_interface():
    """A read the wrapper does not define would be inherited from
    ``LimitSource`` and answer from nothing, not from the source."""
    interface = {name for name, _ in inspect.getmembers(source.LimitSource)
                 if not name.startswith('_') and name != 'writable'}
    assert interface <= set(vars(cached_source.CachedLimitSource))
