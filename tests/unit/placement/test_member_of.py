"""The member_of parser: Placement's forms, messages, and properties."""

import uuid

from hypothesis import given
from hypothesis import strategies as st
import pytest

from cyquota import exception
from cyquota.placement import member_of

A, B, C, D = (str(uuid.UUID(int=n)) for n in range(1, 5))

UUID_ERROR = ("Invalid query string parameters: Expected 'member_of' "
              "parameter to contain valid UUID(s). Got: %s")
PREFIX_ERROR = ("Multiple values for 'member_of' must be prefixed with the "
                "'in:' or '!in:' keyword using the valid microversion. "
                "Got: %s")


@pytest.mark.parametrize('values, required, forbidden', [
    ([A], [{A}], set()),
    (['in:%s,%s' % (A, B)], [{A, B}], set()),
    (['!' + A], [], {A}),
    (['!in:%s,%s' % (A, B)], [], {A, B}),
    # Repeated parameters AND together; !in: is the same as several !U.
    (['in:%s,%s' % (A, B), C, '!' + D], [{A, B}, {C}], {D}),
    (['!' + A, '!' + B], [], {A, B}),
    # Required and forbidden at once is not an error (it matches nothing).
    ([A, '!' + A], [{A}], {A}),
    # Every UUID spelling Placement accepts, kept in canonical form.
    ([A.upper()], [{A}], set()),
    ([A.replace('-', '')], [{A}], set()),
    (['{%s}' % A], [{A}], set()),
    ([], [], set()),
])
def test_accepted_forms(values, required, forbidden):
    parsed = member_of.parse(values)
    assert [set(aggs) for aggs in parsed.required] == required
    assert parsed.forbidden == forbidden


@pytest.mark.parametrize('value, element', [
    ('in:%s,!%s' % (A, B), '!' + B),         # ! inside in:
    ('in:!%s' % A, '!' + A),
    ('!in:%s,!%s' % (A, B), '!' + B),
    ('!', ''),
    ('in:', ''),
    ('!in:', ''),
    ('', ''),
    ('!!' + A, '!' + A),
    ('not-a-uuid', 'not-a-uuid'),
    ('in:%s,' % A, ''),
    (' ' + A, ' ' + A),
])
def test_elements_that_are_not_uuids(value, element):
    with pytest.raises(exception.InvalidMemberOf) as caught:
        member_of.parse([value])
    assert caught.value.message == UUID_ERROR % element
    assert caught.value.code == 400


@pytest.mark.parametrize('value', [
    '%s,%s' % (A, B), '!%s,%s' % (A, B), 'IN:%s,%s' % (A, B),
    ' in:%s,%s' % (A, B)])
def test_comma_list_without_prefix(value):
    with pytest.raises(exception.InvalidMemberOf) as caught:
        member_of.parse([value])
    assert caught.value.message == PREFIX_ERROR % value


def test_membership_checks():
    parsed = member_of.parse(['in:%s,%s' % (A, B), C, '!' + D])
    assert parsed.required_by({A, C})
    assert parsed.required_by({B, C})
    assert not parsed.required_by({A})
    assert not parsed.required_by({C})
    assert parsed.forbids({D})
    assert not parsed.forbids({A, B, C})


# -- properties ------------------------------------------------------------

UUIDS = st.uuids().map(str)
SPELLINGS = st.sampled_from([str, str.upper, lambda u: u.replace('-', ''),
                             lambda u: '{%s}' % u])
SPELLED = st.builds(lambda u, spell: spell(u), UUIDS, SPELLINGS)
AGG_LISTS = st.lists(SPELLED, min_size=1, max_size=4)
VALID_VALUE = st.one_of(
    SPELLED,
    SPELLED.map(lambda u: '!' + u),
    AGG_LISTS.map(lambda aggs: 'in:' + ','.join(aggs)),
    AGG_LISTS.map(lambda aggs: '!in:' + ','.join(aggs)),
)
ANY_TEXT = st.text(alphabet=st.sampled_from(
    list('!in:,-{}abcdef0123456789 ABCDEF') + ['\x00', '\u00e9']),
    max_size=80)


@given(st.lists(VALID_VALUE, max_size=5))
def test_accepted_strings_round_trip(values):
    parsed = member_of.parse(values)
    again = member_of.parse(parsed.to_params())
    assert again == parsed
    wanted = [frozenset(str(uuid.UUID(agg.strip('{}').replace('!', '')))
                        for agg in value.split(':', 1)[-1].split(','))
              for value in values if not value.startswith('!')]
    assert list(parsed.required) == wanted


@given(st.lists(UUIDS, min_size=0, max_size=3),
       st.lists(UUIDS, min_size=0, max_size=3), UUIDS,
       st.sampled_from(['in:', '!in:']))
def test_bang_inside_in_is_a_400(before, after, bad, prefix):
    value = prefix + ','.join(before + ['!' + bad] + after)
    with pytest.raises(exception.InvalidMemberOf) as caught:
        member_of.parse([value])
    assert caught.value.code == 400


@given(st.lists(ANY_TEXT, max_size=4))
def test_any_string_is_parsed_or_refused_with_a_400(values):
    try:
        parsed = member_of.parse(values)
    except exception.InvalidMemberOf as error:
        assert error.code == 400
        assert error.message.startswith(
            ("Invalid query string parameters: Expected 'member_of'",
             "Multiple values for 'member_of' must be prefixed"))
    else:
        assert member_of.parse(parsed.to_params()) == parsed
