"""MaxLeaseDurationFilter, its options and its deprecated names."""

import logging

import pytest

from cyquota.enforcement import chain
from cyquota.enforcement import max_lease_duration
from cyquota import exception
from tests import enforcement_helpers as helpers

DAY = 86400


def _filter(tmp_path, **options):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        name: str(value) for name, value in options.items()}})
    return max_lease_duration.MaxLeaseDurationFilter(conf)


def test_a_lease_exactly_the_maximum_is_allowed(tmp_path):
    duration_filter = _filter(tmp_path, max_lease_duration=DAY)
    duration_filter.check_create(helpers.context_document(),
                                 helpers.lease_document(DAY))


def test_one_second_more_is_denied_with_a_message_naming_both(tmp_path):
    duration_filter = _filter(tmp_path, max_lease_duration=DAY)
    with pytest.raises(exception.EnforcementDenied) as denied:
        duration_filter.check_create(helpers.context_document(),
                                     helpers.lease_document(DAY + 1))
    assert denied.value.code == 403
    assert denied.value.kind == 'enforcement_denied'
    assert denied.value.kwargs['filter'] == 'MaxLeaseDurationFilter'
    assert denied.value.message == (
        'The lease lasts 1 day, 0:00:01 (86401 seconds), longer than the '
        'maximum lease duration of 1 day, 0:00:00 (86400 seconds).')


def test_minus_one_is_no_limit(tmp_path):
    duration_filter = _filter(tmp_path)
    assert duration_filter.maximum() is None
    duration_filter.check_create(helpers.context_document(),
                                 helpers.lease_document(365 * DAY))


def test_exempt_projects_are_not_limited(tmp_path):
    duration_filter = _filter(
        tmp_path, max_lease_duration=60,
        max_lease_duration_exempt_project_ids='p-free,p-other')
    duration_filter.check_create(helpers.context_document('p-free'),
                                 helpers.lease_document(DAY))
    with pytest.raises(exception.EnforcementDenied):
        duration_filter.check_create(helpers.context_document('p-paying'),
                                     helpers.lease_document(DAY))


def test_update_is_measured_from_the_start_date_of_the_lease(tmp_path):
    duration_filter = _filter(tmp_path, max_lease_duration=DAY)
    current = helpers.lease_document(DAY)
    # An active lease extended by an hour: one hour longer than allowed from
    # its original start, whatever its current remaining time.
    with pytest.raises(exception.EnforcementDenied):
        duration_filter.check_update(helpers.context_document(), current,
                                     helpers.lease_document(DAY + 3600))
    duration_filter.check_update(helpers.context_document(), current,
                                 helpers.lease_document(DAY - 3600))


def test_deprecated_reservation_max_length_applies_alone(tmp_path):
    duration_filter = _filter(tmp_path, reservation_max_length=3600)
    assert duration_filter.maximum() == 3600
    duration_filter.check_create(helpers.context_document(),
                                 helpers.lease_document(3600))
    with pytest.raises(exception.EnforcementDenied):
        duration_filter.check_create(helpers.context_document(),
                                     helpers.lease_document(3601))


def test_reservation_max_length_zero_is_no_limit(tmp_path):
    assert _filter(tmp_path, reservation_max_length=0).maximum() is None


@pytest.mark.parametrize('new, old, expected', [
    (7200, 3600, 7200), (3600, 7200, 3600), (0, 3600, 0)])
def test_max_lease_duration_wins_when_both_are_set(tmp_path, new, old,
                                                   expected):
    duration_filter = _filter(tmp_path, max_lease_duration=new,
                              reservation_max_length=old)
    assert duration_filter.maximum() == expected


def test_deprecated_filter_name_loads_the_same_filter_and_warns_once(
        tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(chain, '_warned_aliases', set())
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'MaximumReservationLengthFilter',
        'max_lease_duration': '60'}})
    caplog.set_level(logging.WARNING)
    first = chain.load_chain(conf)
    chain.load_chain(conf)
    (duration_filter,) = first.filters
    assert isinstance(duration_filter,
                      max_lease_duration.MaxLeaseDurationFilter)
    assert first.names == ['MaxLeaseDurationFilter']
    warnings = [record.getMessage() for record in caplog.records
                if 'deprecated' in record.getMessage()]
    assert warnings == [
        'Usage enforcement filter name MaximumReservationLengthFilter in '
        '[enforcement] enabled_filters is deprecated: use '
        'MaxLeaseDurationFilter']
    with pytest.raises(exception.EnforcementDenied):
        first.check_create(helpers.request_context(),
                           helpers.lease_document(61))
