"""Parsing a device request (the allocation candidates query)."""

import uuid

from hypothesis import given
from hypothesis import strategies as st
import pytest
import webob

from cyquota import exception
from cyquota.placement import request

A, B = (str(uuid.UUID(int=n)) for n in range(1, 3))


def test_groups_from_a_query_string():
    query = webob.Request.blank(
        '/?resources=FPGA:1,CUSTOM_X:2&member_of=in:%s,%s&member_of=!%s'
        '&resources1=PGPU:1&member_of1=%s&resources_dev-2=FPGA:1'
        '&group_policy=isolate&limit=3&member_key=reservation:r1'
        % (A, B, A, B)).GET
    parsed = request.from_params(query)
    assert [g.suffix for g in parsed.groups] == ['', '1', '_dev-2']
    unnumbered, first, second = parsed.groups
    assert unnumbered.resources == {'FPGA': 1, 'CUSTOM_X': 2}
    assert not unnumbered.use_same_provider
    assert unnumbered.member_of.required == (frozenset({A, B}),)
    assert unnumbered.member_of.forbidden == {A}
    assert first.use_same_provider and first.resources == {'PGPU': 1}
    assert first.member_of.required == (frozenset({B}),)
    assert not second.member_of
    assert parsed.group_policy == 'isolate'
    assert parsed.limit == 3
    assert parsed.member_keys == {'reservation:r1'}
    assert parsed.totals() == {'FPGA': 2, 'CUSTOM_X': 2, 'PGPU': 1}


def test_mapping_and_pairs_give_the_same_request():
    from_mapping = request.from_params(
        {'resources1': 'FPGA:1', 'resources2': 'FPGA:1',
         'group_policy': 'none', 'member_of1': ['in:%s,%s' % (A, B), A]})
    from_pairs = request.from_params(
        [('resources1', 'FPGA:1'), ('member_of1', 'in:%s,%s' % (A, B)),
         ('member_of1', A), ('resources2', 'FPGA:1'),
         ('group_policy', 'none')])
    assert from_mapping == from_pairs


@pytest.mark.parametrize('params, detail', [
    ({}, 'At least one request group (`resources` or `resources{$S}`) is '
         'required.'),
    ({'resources': ''}, 'Badly formed resources parameter. Expected '
                        'resources query string parameter in form: '
                        '?resources=VCPU:2,MEMORY_MB:1024. Got: empty '
                        'string.'),
    ({'resources': 'FPGA'}, 'Badly formed resources parameter. Expected '
                            'resources query string parameter in form: '
                            '?resources=VCPU:2,MEMORY_MB:1024. Got: FPGA.'),
    ({'resources': 'FPGA:x'}, 'Requested resource FPGA expected positive '
                              'integer amount. Got: x.'),
    ({'resources': 'FPGA:0'}, 'Requested resource FPGA requires amount >= '
                              '1. Got: 0.'),
    ({'resources': 'FPGA:2147483648'}, 'Requested resource FPGA requires '
                                       'amount <= 2147483647. Got: '
                                       '2147483648.'),
    ({'resources': 'fpga:1'}, 'Invalid resource class in resources '
                              'parameter: No such resource class fpga.'),
    ({'resources': 'FPGA:1', 'required': 'HW_X'},
     "Invalid query string parameters: Additional properties are not "
     "allowed ('required' was unexpected)"),
    ({'resources': 'FPGA:1', 'member_of1': A},
     'All member_of parameters must be associated with resources. Found '
     'the following orphaned member_of keys: member_of1'),
    ({'resources1': 'FPGA:1', 'resources2': 'FPGA:1'},
     'The "group_policy" parameter is required when specifying more than '
     'one "resources{N}" parameter.'),
    ({'resources': 'FPGA:1', 'group_policy': 'spread'},
     "Invalid query string parameters: 'spread' is not one of ['none', "
     "'isolate']"),
    ({'resources': 'FPGA:1', 'limit': '0'},
     "Invalid query string parameters: '0' does not match "
     "'^[1-9][0-9]*$'"),
    ({'resources': ['FPGA:1', 'FPGA:2']},
     "Query parameter 'resources' may be specified only once."),
    ({'resources': 'FPGA:1', 'member_key': ''},
     "Invalid query string parameters: Expected 'member_key' parameter to "
     "be an aggregate metadata key of 1 to 255 characters. Got: "),
    ({'resources': 1}, "Invalid query string parameters: expected string "
                       "keys and values. Got: ('resources', 1)"),
])
def test_bad_requests_are_400s(params, detail):
    with pytest.raises(exception.InvalidQuery) as caught:
        request.from_params(params)
    assert caught.value.message == detail
    assert caught.value.code == 400


def test_member_of_errors_keep_their_own_kind():
    with pytest.raises(exception.InvalidMemberOf) as caught:
        request.from_params({'resources': 'FPGA:1',
                             'member_of': 'in:%s,!%s' % (A, B)})
    assert caught.value.kind == 'invalid_member_of'


KEYS = st.sampled_from(['resources', 'resources1', 'resources_a-b',
                        'member_of', 'member_of1', 'group_policy', 'limit',
                        'member_key', 'resources' + 'x' * 65, 'other'])
VALUES = st.one_of(st.text(max_size=30), st.sampled_from([
    'FPGA:1', 'FPGA:1,PGPU:2', 'isolate', 'none', '2', A, '!' + A,
    'in:%s,%s' % (A, B), 'in:%s,!%s' % (A, B)]))


@given(st.lists(st.tuples(KEYS, VALUES), max_size=6))
def test_any_query_is_parsed_or_refused_with_a_400(pairs):
    try:
        parsed = request.from_params(pairs)
    except exception.InvalidQuery as error:
        assert error.code == 400 and error.message
    else:
        assert parsed.groups and all(group.resources
                                     for group in parsed.groups)
