"""ExternalServiceFilter against real HTTP(S) services on 127.0.0.1.

Each service is purpose-built: it records what it receives and answers
with a fixed status and body (or sleeps, or is not there at all). Every
test checks that the token never reaches the logs.
"""

import json
import logging
import socket
import ssl
import time

import pytest
import trustme

from cyquota.enforcement import chain
from cyquota.enforcement import external_service
from cyquota import exception
from tests import enforcement_helpers as helpers

pytestmark = pytest.mark.timeout(60)

TOKEN = 'tok-6f1c3a9e-never-log-me'
GENERIC = external_service.GENERIC_REFUSAL


@pytest.fixture(autouse=True)
def logs(caplog):
    """Every log line of the test, at DEBUG (requests and urllib3 too)."""
    caplog.set_level(logging.DEBUG)
    yield caplog
    assert TOKEN not in caplog.text


@pytest.fixture
def services():
    """Start RecordingServices; all are stopped after the test."""
    started = []

    def start(*args, **kwargs):
        service = helpers.RecordingService(*args, **kwargs)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


def make_filter(tmp_path, endpoint_url=None, allow_on_error=False,
                **options):
    external = {'token': TOKEN, 'allow_on_error': str(allow_on_error),
                'timeout': '0.5'}
    if endpoint_url:
        external['endpoint_url'] = endpoint_url
    external.update(options)
    conf = helpers.make_conf(tmp_path, {'enforcement_external': external})
    return external_service.ExternalServiceFilter(conf)


def check_create(service_filter, lease_id='lease-uuid-1'):
    """None when allowed, else the denial."""
    filter_chain = chain.FilterChain([service_filter])
    try:
        filter_chain.check_create(helpers.request_context(),
                                  helpers.lease_document(), lease_id)
    except exception.EnforcementDenied as denied:
        assert denied.kwargs['filter'] == 'ExternalServiceFilter'
        return denied.message
    return None


def free_port():
    """A port of 127.0.0.1 that nobody listens on."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# -- what the service receives -------------------------------------------

def test_check_create_request(tmp_path, services):
    service = services()
    conf = helpers.make_conf(tmp_path, {
        'enforcement': {'enabled_filters': 'ExternalServiceFilter',
                        'auth_url': 'https://keystone.example.com/v3',
                        'region_name': 'RegionOne'},
        'enforcement_external': {'endpoint_url': service.url,
                                 'token': TOKEN}})
    lease = helpers.lease_document(amount=2, lease_id='lease-uuid-1')
    chain.load_chain(conf).check_create(
        helpers.request_context('p-1', 'u-1'), lease, 'lease-uuid-1')
    (request,) = service.requests
    assert request['path'] == '/check-create'
    assert request['headers']['X-Auth-Token'] == TOKEN
    assert request['headers']['Content-Type'] == 'application/json'
    assert json.loads(request['body']) == {
        'context': {'user_id': 'u-1', 'project_id': 'p-1',
                    'auth_url': 'https://keystone.example.com/v3',
                    'region_name': 'RegionOne'},
        'lease': lease}
    assert set(json.loads(request['body'])['lease']) == {
        'id', 'name', 'start_date', 'end_date', 'reservations'}


def test_check_update_request(tmp_path, services):
    service = services()
    current = helpers.lease_document(3600, lease_id='lease-uuid-1')
    requested = helpers.lease_document(7200, amount=2, name='renamed',
                                       lease_id='lease-uuid-1')
    chain.FilterChain([make_filter(tmp_path, service.url)]).check_update(
        helpers.request_context('p-1', 'updater'), current, requested,
        'lease-uuid-1')
    (request,) = service.requests
    assert request['path'] == '/check-update'
    assert request['headers']['X-Auth-Token'] == TOKEN
    assert request['headers']['Content-Type'] == 'application/json'
    assert json.loads(request['body']) == {
        'context': helpers.context_document('p-1', 'updater'),
        'current_lease': current, 'lease': requested}


def test_on_end_request(tmp_path, services):
    service = services()
    lease = helpers.lease_document(lease_id='lease-uuid-1')
    chain.FilterChain([make_filter(tmp_path, service.url)]).on_end(
        helpers.request_context('p-1', 'u-1'), lease, 'lease-uuid-1')
    (request,) = service.requests
    assert request['path'] == '/on-end'
    assert request['headers']['X-Auth-Token'] == TOKEN
    assert request['headers']['Content-Type'] == 'application/json'
    assert json.loads(request['body']) == {
        'context': helpers.context_document('p-1', 'u-1'), 'lease': lease}


def test_no_token_no_header(tmp_path, services):
    service = services()
    conf = helpers.make_conf(tmp_path, {'enforcement_external': {
        'endpoint_url': service.url}})
    assert check_create(external_service.ExternalServiceFilter(conf)) is None
    assert 'X-Auth-Token' not in service.requests[0]['headers']


@pytest.mark.parametrize('suffix', ['/policy/v1', '/policy/v1/'])
def test_a_base_url_with_a_path_keeps_it(tmp_path, services, suffix):
    service = services()
    filter_chain = chain.FilterChain([make_filter(tmp_path,
                                                  service.url + suffix)])
    context, lease = helpers.request_context(), helpers.lease_document()
    filter_chain.check_create(context, lease)
    filter_chain.check_update(context, lease, lease)
    filter_chain.on_end(context, lease)
    assert [request['path'] for request in service.requests] == [
        '/policy/v1/check-create', '/policy/v1/check-update',
        '/policy/v1/on-end']


def test_per_call_endpoints_override_the_base(tmp_path, services):
    base, other = services(), services()
    filter_chain = chain.FilterChain([make_filter(
        tmp_path, base.url,
        check_create_endpoint=other.url + '/create-here',
        on_end_endpoint=other.url + '/ended')])
    context, lease = helpers.request_context(), helpers.lease_document()
    filter_chain.check_create(context, lease)
    filter_chain.check_update(context, lease, lease)
    filter_chain.on_end(context, lease)
    assert [request['path'] for request in other.requests] == [
        '/create-here', '/ended']
    assert [request['path'] for request in base.requests] == [
        '/check-update']


def test_a_call_without_endpoint_is_not_sent(tmp_path, services):
    service = services(answer=(403, b'{"message": "no"}'))
    service_filter = make_filter(
        tmp_path, check_update_endpoint=service.url + '/update')
    assert check_create(service_filter) is None
    chain.FilterChain([service_filter]).on_end(helpers.request_context(),
                                               helpers.lease_document())
    assert service.requests == []
    with pytest.raises(exception.EnforcementDenied, match='^no$'):
        service_filter.check_update(helpers.context_document(),
                                    helpers.lease_document(),
                                    helpers.lease_document())


def test_blazar_option_names_are_deprecated_aliases(tmp_path, services):
    base, other = services(), services()
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'enabled_filters': 'ExternalServiceFilter',
        'external_service_base_endpoint': base.url + '/v1',
        'external_service_check_create_endpoint': other.url + '/create',
        'external_service_check_update_endpoint': other.url + '/update',
        'external_service_on_end_endpoint': other.url + '/end',
        'external_service_token': TOKEN}})
    options = conf.enforcement_external
    assert options.endpoint_url == base.url + '/v1'
    assert options.token == TOKEN
    filter_chain = chain.load_chain(conf)
    context, lease = helpers.request_context(), helpers.lease_document()
    filter_chain.check_create(context, lease)
    filter_chain.check_update(context, lease, lease)
    filter_chain.on_end(context, lease)
    assert [(request['path'], request['headers']['X-Auth-Token'])
            for request in other.requests] == [
        ('/create', TOKEN), ('/update', TOKEN), ('/end', TOKEN)]
    assert base.requests == []


def test_deprecated_base_endpoint_alone(tmp_path, services):
    service = services()
    conf = helpers.make_conf(tmp_path, {'enforcement': {
        'external_service_base_endpoint': service.url,
        'external_service_token': TOKEN}})
    assert check_create(external_service.ExternalServiceFilter(conf)) is None
    assert service.requests[0]['path'] == '/check-create'
    assert service.requests[0]['headers']['X-Auth-Token'] == TOKEN


# -- outcomes ------------------------------------------------------------

@pytest.mark.parametrize('allow_on_error', [False, True])
def test_204_allows(tmp_path, services, allow_on_error, logs):
    service = services(answer=(204, b''))
    assert check_create(make_filter(tmp_path, service.url,
                                    allow_on_error)) is None
    assert ('ExternalServiceFilter check-create of lease lease-uuid-1: POST '
            '%s/check-create -> 204' % service.url) in logs.text


@pytest.mark.parametrize('allow_on_error', [False, True])
def test_403_denies_with_the_message(tmp_path, services, allow_on_error,
                                     logs):
    service = services(answer=(
        403, b'{"message": "Your project has used its GPU hours."}'))
    assert check_create(make_filter(tmp_path, service.url, allow_on_error)) \
        == 'Your project has used its GPU hours.'
    assert 'lease lease-uuid-1' in logs.text and '-> 403' in logs.text


@pytest.mark.parametrize('allow_on_error', [False, True])
@pytest.mark.parametrize('body', [
    b'not json at all', b'["message"]', b'{"message": 42}', b'{}',
    b'{"message": ""}', b''])
def test_403_without_a_usable_message_denies_generically(
        tmp_path, services, allow_on_error, body):
    service = services(answer=(403, body))
    assert check_create(make_filter(tmp_path, service.url,
                                    allow_on_error)) == GENERIC


@pytest.mark.parametrize('status', [500, 200, 400, 307])
@pytest.mark.parametrize('allow_on_error', [False, True])
def test_any_other_status_is_an_error(tmp_path, services, allow_on_error,
                                      status, logs):
    service = services(answer=(
        status, b'{"message": "internal detail the user must not see"}'))
    denial = check_create(make_filter(tmp_path, service.url, allow_on_error))
    if allow_on_error:
        assert denial is None
        assert 'allowed (allow_on_error is set)' in logs.text
    else:
        assert denial == ('The usage enforcement service could not decide '
                          '(HTTP %d); the request is refused.' % status)
    assert len(service.requests) == 1


@pytest.mark.parametrize('allow_on_error', [False, True])
def test_a_hung_service_times_out(tmp_path, services, allow_on_error):
    service = services(delay=3)
    started = time.monotonic()
    denial = check_create(make_filter(tmp_path, service.url, allow_on_error,
                                      timeout='0.3'))
    assert time.monotonic() - started < 2
    assert denial == (None if allow_on_error else
                      'The usage enforcement service could not decide '
                      '(timeout); the request is refused.')


@pytest.mark.parametrize('allow_on_error', [False, True])
def test_a_refused_connection(tmp_path, allow_on_error):
    url = 'http://127.0.0.1:%d' % free_port()
    denial = check_create(make_filter(tmp_path, url, allow_on_error))
    assert denial == (None if allow_on_error else
                      'The usage enforcement service could not decide '
                      '(connection error); the request is refused.')


@pytest.fixture(scope='module')
def certificate_authority():
    return trustme.CA()


@pytest.fixture
def tls_services(services, certificate_authority):
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate_authority.issue_cert('127.0.0.1').configure_cert(
        server_context)

    def start(**kwargs):
        return services(ssl_context=server_context, **kwargs)

    return start


@pytest.mark.parametrize('allow_on_error', [False, True])
def test_tls_verified_with_ca_file(tmp_path, tls_services,
                                   certificate_authority, allow_on_error):
    service = tls_services(answer=(403, b'{"message": "over TLS"}'))
    ca_file = tmp_path / 'ca.pem'
    certificate_authority.cert_pem.write_to_path(str(ca_file))
    assert service.url.startswith('https://')
    assert check_create(make_filter(tmp_path, service.url, allow_on_error,
                                    ca_file=str(ca_file))) == 'over TLS'
    assert json.loads(service.requests[0]['body'])['lease'] == \
        helpers.lease_document(lease_id='lease-uuid-1')


@pytest.mark.parametrize('allow_on_error', [False, True])
def test_tls_with_an_unknown_ca_is_an_error(tmp_path, tls_services,
                                            allow_on_error):
    service = tls_services(answer=(204, b''))
    denial = check_create(make_filter(tmp_path, service.url, allow_on_error))
    assert denial == (None if allow_on_error else
                      'The usage enforcement service could not decide '
                      '(TLS error); the request is refused.')
    assert service.requests == []


def test_a_missing_ca_file_is_a_config_error(tmp_path):
    with pytest.raises(chain.base.ConfigError, match='ca_file'):
        make_filter(tmp_path, 'https://127.0.0.1:1',
                    ca_file=str(tmp_path / 'missing.pem'))


# -- on-end --------------------------------------------------------------

@pytest.mark.parametrize('answer', [(500, b'boom'),
                                    (403, b'{"message": "late"}')])
def test_on_end_errors_are_logged_only(tmp_path, services, answer, logs):
    service = services(answer=answer)
    chain.FilterChain([make_filter(tmp_path, service.url)]).on_end(
        helpers.request_context(), helpers.lease_document(), 'lease-uuid-3')
    assert len(service.requests) == 1
    assert 'on-end of lease lease-uuid-3' in logs.text
    assert '(ignored: the lease has ended)' in logs.text


def test_on_end_survives_a_dead_and_a_hung_service(tmp_path, services):
    hung = services(delay=3)
    dead_url = 'http://127.0.0.1:%d' % free_port()
    filter_chain = chain.FilterChain([
        make_filter(tmp_path, dead_url),
        make_filter(tmp_path, hung.url, timeout='0.3')])
    started = time.monotonic()
    filter_chain.on_end(helpers.request_context(), helpers.lease_document())
    assert time.monotonic() - started < 2
    assert len(hung.requests) == 1


def test_many_calls_reuse_the_session(tmp_path, services):
    service = services()
    service_filter = make_filter(tmp_path, service.url)
    for _ in range(5):
        assert check_create(service_filter) is None
    assert len(service.requests) == 5
