"""The filter chain: order, first denial, loading by name, exemptions, and
an on_end that never raises."""

import copy
import logging
import pathlib
import re
import textwrap

import pytest
from stevedore import extension

from cyquota import enforcement
from cyquota.enforcement import base
from cyquota.enforcement import chain
from cyquota.enforcement import external_service
from cyquota.enforcement import max_lease_duration
from cyquota import exception
from tests import enforcement_helpers as helpers


class RecordingFilter(base.BaseFilter):
    """Records its calls in ``calls`` (shared between filters) and denies
    or fails when told to."""

    def __init__(self, name, calls, deny=None, fail=False):
        super().__init__()
        self.name = name
        self.calls = calls
        self.denial = deny
        self.fail = fail

    def _record(self, call, *documents):
        self.calls.append((self.name, call, copy.deepcopy(documents),
                           base.current_lease_id()))
        # A filter may scribble on its documents: the next one must not see.
        documents[-1]['name'] = 'changed by %s' % self.name
        if self.fail:
            raise RuntimeError('%s is broken' % self.name)
        if self.denial:
            self.deny(self.denial)

    def check_create(self, context, lease):
        self._record('check_create', context, lease)

    def check_update(self, context, current_lease, lease):
        self._record('check_update', context, current_lease, lease)

    def on_end(self, context, lease):
        self._record('on_end', context, lease)


@pytest.fixture
def calls():
    return []


def test_filters_run_in_order_with_the_documents(tmp_path, calls):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'auth_url': 'https://keystone.example.com/v3',
        'region_name': 'RegionTwo'}})
    filter_chain = chain.FilterChain(
        [RecordingFilter('first', calls), RecordingFilter('second', calls)],
        conf=conf)
    lease = helpers.lease_document(lease_id='lease-uuid')
    filter_chain.check_create(helpers.request_context('p', 'u'), lease,
                              lease_id='lease-uuid')
    expected_context = helpers.context_document(
        'p', 'u', 'https://keystone.example.com/v3', 'RegionTwo')
    assert calls == [
        ('first', 'check_create', (expected_context, lease), 'lease-uuid'),
        ('second', 'check_create', (expected_context, lease), 'lease-uuid')]
    assert lease['name'] == 'lease-1'
    assert base.current_lease_id() is None


def test_check_update_gets_current_and_requested_lease(calls):
    filter_chain = chain.FilterChain([RecordingFilter('only', calls)])
    current = helpers.lease_document(3600)
    requested = helpers.lease_document(7200)
    filter_chain.check_update(helpers.request_context('p', 'updater'),
                              current, requested)
    ((_, call, (context, got_current, got_requested), lease_id),) = calls
    assert call == 'check_update' and lease_id is None
    assert context['user_id'] == 'updater'
    assert (got_current, got_requested) == (current, requested)


def test_first_denial_stops_the_chain(calls, caplog):
    caplog.set_level(logging.INFO)
    filter_chain = chain.FilterChain([
        RecordingFilter('allows', calls),
        RecordingFilter('denies', calls, deny='No, because.'),
        RecordingFilter('never-asked', calls)])
    with pytest.raises(exception.EnforcementDenied) as denied:
        filter_chain.check_create(helpers.request_context(),
                                  helpers.lease_document(), 'lease-9')
    assert denied.value.message == 'No, because.'
    assert denied.value.kwargs['filter'] == 'denies'
    assert [name for name, *_ in calls] == ['allows', 'denies']
    assert 'Lease lease-9: usage enforcement filter denies refused ' \
        'check_create: No, because.' in caplog.text


def test_a_failing_filter_denies(calls):
    filter_chain = chain.FilterChain([RecordingFilter('broken', calls,
                                                      fail=True),
                                      RecordingFilter('next', calls)])
    with pytest.raises(exception.EnforcementDenied) as denied:
        filter_chain.check_update(helpers.request_context(),
                                  helpers.lease_document(),
                                  helpers.lease_document())
    assert denied.value.kwargs['filter'] == 'broken'
    assert 'broken failed' in denied.value.message
    assert [name for name, *_ in calls] == ['broken']


def test_on_end_tells_every_filter_and_never_raises(calls, caplog):
    filter_chain = chain.FilterChain([
        RecordingFilter('broken', calls, fail=True),
        RecordingFilter('denies', calls, deny='Cannot refuse an end'),
        RecordingFilter('last', calls)])
    filter_chain.on_end(helpers.request_context(), helpers.lease_document(),
                        lease_id='lease-7')
    assert [(name, call) for name, call, *_ in calls] == [
        ('broken', 'on_end'), ('denies', 'on_end'), ('last', 'on_end')]
    assert 'Lease lease-7: usage enforcement filter broken failed in ' \
        'on_end' in caplog.text


def test_on_end_never_raises_even_on_a_bad_context(calls):
    chain.FilterChain([RecordingFilter('f', calls)]).on_end(
        object(), helpers.lease_document())
    assert calls == []


def test_no_filter_allows_everything():
    filter_chain = chain.FilterChain([])
    filter_chain.check_create(helpers.request_context(),
                              helpers.lease_document())
    filter_chain.on_end(helpers.request_context(), helpers.lease_document())


def test_exempted_project_id_skips_every_filter(calls):
    def project_names(context, project_id):
        raise AssertionError('no name in exempted_projects: not called')

    filter_chain = chain.FilterChain(
        [RecordingFilter('denies', calls, deny='no')],
        exempted_projects=['p-exempt'], project_names=project_names)
    context = helpers.request_context('p-exempt')
    filter_chain.check_create(context, helpers.lease_document())
    filter_chain.check_update(context, helpers.lease_document(),
                              helpers.lease_document())
    filter_chain.on_end(context, helpers.lease_document())
    assert calls == []
    with pytest.raises(exception.EnforcementDenied):
        filter_chain.check_create(helpers.request_context('p-other'),
                                  helpers.lease_document())


def test_exempted_project_by_name_at_domain(calls):
    asked = []

    def project_names(context, project_id):
        asked.append(project_id)
        return {'research@Default'} if project_id == 'p-research' else {
            'other@Default'}

    filter_chain = chain.FilterChain(
        [RecordingFilter('denies', calls, deny='no')],
        exempted_projects=['p-id', 'research@Default'],
        project_names=project_names)
    filter_chain.check_create(helpers.request_context('p-research'),
                              helpers.lease_document())
    with pytest.raises(exception.EnforcementDenied):
        filter_chain.check_create(helpers.request_context('p-other'),
                                  helpers.lease_document())
    assert asked == ['p-research', 'p-other']


def test_a_failing_name_lookup_exempts_nobody(calls, caplog):
    def project_names(context, project_id):
        raise RuntimeError('limit source down')

    filter_chain = chain.FilterChain(
        [RecordingFilter('denies', calls, deny='no')],
        exempted_projects=['research@Default'], project_names=project_names)
    with pytest.raises(exception.EnforcementDenied):
        filter_chain.check_create(helpers.request_context('p-research'),
                                  helpers.lease_document())
    assert 'it is not exempted' in caplog.text


def test_load_chain_follows_the_configured_order(tmp_path):
    external = {'endpoint_url': 'http://127.0.0.1:9'}
    conf = helpers.make_conf(tmp_path, {
        'enforcement': {'enabled_filters':
                        'ExternalServiceFilter,MaxLeaseDurationFilter',
                        'exempted_projects': 'p-1,name@Default'},
        'enforcement_external': external})
    loaded = chain.load_chain(conf)
    assert loaded.names == ['ExternalServiceFilter', 'MaxLeaseDurationFilter']
    assert isinstance(loaded.filters[0],
                      external_service.ExternalServiceFilter)
    assert isinstance(loaded.filters[1],
                      max_lease_duration.MaxLeaseDurationFilter)
    assert loaded.filters[1].conf is conf
    conf = helpers.make_conf(tmp_path, {
        'enforcement': {'enabled_filters':
                        'MaxLeaseDurationFilter,ExternalServiceFilter'},
        'enforcement_external': external})
    assert chain.load_chain(conf).names == ['MaxLeaseDurationFilter',
                                            'ExternalServiceFilter']


def test_the_global_configuration_has_no_filter_by_default():
    assert enforcement.load_chain().names == []
    enforcement.check_config()


def test_an_unknown_filter_is_named(tmp_path):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'MaxLeaseDurationFilter,NoSuchFilter'}})
    with pytest.raises(enforcement.UnknownFilter) as error:
        enforcement.check_config(conf)
    assert isinstance(error.value, enforcement.ConfigError)
    assert error.value.name == 'NoSuchFilter'
    message = str(error.value)
    assert "Unknown usage enforcement filter 'NoSuchFilter'" in message
    assert 'installed: ExternalServiceFilter, MaxLeaseDurationFilter, ' \
        'MaximumReservationLengthFilter' in message
    assert '\n' not in message


def test_a_filter_refusing_its_options_stops_check_config(tmp_path):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'ExternalServiceFilter'}})
    with pytest.raises(enforcement.ConfigError,
                       match=r'ExternalServiceFilter is enabled but has no '
                             r'endpoint: set \[enforcement_external\] '
                             r'endpoint_url'):
        enforcement.check_config(conf)


PLUGIN = '''
from cyquota.enforcement import base


class NoWeekendFilter(base.BaseFilter):
    def check_create(self, context, lease):
        if lease['name'] == 'weekend':
            self.deny('No leases named weekend.')
'''


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A plugin distribution on sys.path, as pip would install it, with
    the entry points NoWeekendFilter and Broken (an import error)."""
    site = tmp_path / 'site'
    dist_info = site / 'weekend_plugin-1.0.dist-info'
    dist_info.mkdir(parents=True)
    (site / 'weekend_plugin.py').write_text(PLUGIN)
    (dist_info / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: weekend-plugin\nVersion: 1.0\n')
    (dist_info / 'entry_points.txt').write_text(textwrap.dedent('''\
        [cyquota.enforcement.filters]
        NoWeekendFilter = weekend_plugin:NoWeekendFilter
        Broken = no_such_module:Filter
        '''))
    monkeypatch.syspath_prepend(str(site))
    # stevedore reads a group's entry points once per process.
    monkeypatch.setattr(extension.ExtensionManager, 'ENTRY_POINT_CACHE', {})
    return site


def test_a_plugin_is_loaded_by_its_entry_point_name(tmp_path,
                                                    installed_plugin):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'NoWeekendFilter'}})
    loaded = chain.load_chain(conf)
    assert loaded.names == ['NoWeekendFilter']
    loaded.check_create(helpers.request_context(),
                        helpers.lease_document(name='weekday'))
    with pytest.raises(exception.EnforcementDenied) as denied:
        loaded.check_create(helpers.request_context(),
                            helpers.lease_document(name='weekend'))
    assert denied.value.message == 'No leases named weekend.'
    assert denied.value.kwargs['filter'] == 'NoWeekendFilter'


def test_a_plugin_that_cannot_be_imported_is_named(tmp_path,
                                                   installed_plugin):
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'Broken'}})
    with pytest.raises(enforcement.ConfigError,
                       match=r'^Usage enforcement filter Broken '
                             r'\(no_such_module:Filter\) cannot be loaded'):
        enforcement.check_config(conf)


def test_the_plugin_of_the_documentation_works(tmp_path, monkeypatch):
    doc = pathlib.Path(__file__).resolve().parents[3] / 'doc' / \
        'source' / 'enforcement.rst'
    (code,) = re.findall(r'code-block:: python\n\n((?:   .*\n|\n)+)',
                         doc.read_text())
    entry_points = re.search(
        r'cyquota\.enforcement\.filters =\n((?:       .*\n)+)',
        doc.read_text())[1]
    site = tmp_path / 'site'
    (site / 'max_accelerators').mkdir(parents=True)
    (site / 'max_accelerators' / '__init__.py').write_text(
        textwrap.dedent(code))
    dist_info = site / 'cyquota_max_accelerators-1.0.dist-info'
    dist_info.mkdir()
    (dist_info / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: cyquota-max-accelerators\n'
        'Version: 1.0\n')
    (dist_info / 'entry_points.txt').write_text(
        '[cyquota.enforcement.filters]\n' + textwrap.dedent(entry_points))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(extension.ExtensionManager, 'ENTRY_POINT_CACHE', {})
    conf = helpers.make_conf(tmp_path, {
        'enforcement': {'enabled_filters': 'MaxAcceleratorsFilter'},
        'max_accelerators': {'limit': '2'}})
    loaded = chain.load_chain(conf)
    loaded.check_create(helpers.request_context(),
                        helpers.lease_document(amount=2))
    with pytest.raises(exception.EnforcementDenied,
                       match='^A lease may hold at most 2 accelerators; '
                             'this one asks for 3.$'):
        loaded.check_update(helpers.request_context(),
                            helpers.lease_document(amount=2),
                            helpers.lease_document(amount=3))


def test_the_lease_project_is_the_context_and_the_exemption(calls):
    """An admin of an exempted project acting for another project: the
    filters see, and exemption judges, the lease's project."""
    filter_chain = chain.FilterChain([RecordingFilter('f', calls)],
                                     exempted_projects=['p-admin'])
    admin = helpers.request_context('p-admin', 'admin-user')
    filter_chain.check_create(admin, helpers.lease_document(), 'l-1',
                              project_id='lab')
    filter_chain.check_update(admin, helpers.lease_document(),
                              helpers.lease_document(), 'l-1',
                              project_id='lab')
    filter_chain.on_end(admin, helpers.lease_document(), 'l-1',
                        project_id='lab')
    assert [(call, documents[0]['project_id'], documents[0]['user_id'],
             [lease['id'] for lease in documents[1:]])
            for _, call, documents, _ in calls] == [
        ('check_create', 'lab', 'admin-user', ['l-1']),
        ('check_update', 'lab', 'admin-user', ['l-1', 'l-1']),
        ('on_end', 'lab', 'admin-user', ['l-1'])]
    filter_chain.check_create(helpers.request_context('lab'),
                              helpers.lease_document(), 'l-2',
                              project_id='p-admin')
    assert len(calls) == 3
