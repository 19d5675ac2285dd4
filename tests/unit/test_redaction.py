"""Passwords and configured secrets masked in any text: URLs with one or
several hosts, mistyped ones, passwords of any character; in time linear
in the text, whatever it holds."""

import io
import json
import logging
import string
import sys
import time

from hypothesis import given
from hypothesis import strategies as st
from oslo_log import formatters as oslo_formatters
import pytest

from cyquota.cloud import placement_errors
from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota import redaction
from cyquota import service

# What a URL's password may hold unencoded in a config file, but for the
# white space and quotes that end a word.
PASSWORDS = st.text(alphabet=string.ascii_letters + string.digits
                    + '!#$%&()*+-.;<=>?@[]^_{|}~:,/', min_size=1,
                    max_size=20)
USERS = st.text(alphabet=string.ascii_letters + string.digits + '_-.',
                min_size=1, max_size=10)
SCHEMES = st.sampled_from(['postgresql+psycopg2://', 'mysql+pymysql://',
                           'rabbit://', 'redis://', 'https://',
                           'postgresql+psycopg2//', 'rabbit//'])


@given(SCHEMES, USERS, PASSWORDS.filter(lambda p: not p.startswith('/')))
def test_one_host_url_never_shows_its_password(scheme, user, password):
    url = '%s%s:%s@db.example:5432/cyquota' % (scheme, user, password)
    assert redaction.mask_url('cannot use %r: refused' % url) == (
        "cannot use '%s%s:***@db.example:5432/cyquota': refused"
        % (scheme, user))
    assert password in redaction.url_passwords(url)


@given(st.lists(st.tuples(USERS, PASSWORDS.filter(
    lambda p: not set(p) & set('@,/')) .filter(lambda p: ':' not in p)),
    min_size=2, max_size=4))
def test_several_hosts_keep_their_hosts(hosts):
    url = 'rabbit://' + ','.join(
        '%s:%s@h%d:5672' % (user, password, n)
        for n, (user, password) in enumerate(hosts)) + '/'
    masked = redaction.mask_url(url)
    assert masked == 'rabbit://' + ','.join(
        '%s:***@h%d:5672' % (user, n)
        for n, (user, _) in enumerate(hosts)) + '/'


@pytest.mark.parametrize('text, expected', [
    ('postgresql+psycopg2//postgres:PW@127.0.0.1/x',
     'postgresql+psycopg2//postgres:***@127.0.0.1/x'),
    ("'mysql+pymysql://root:p@ss/w,rd@db/cyquota'",
     "'mysql+pymysql://root:***@db/cyquota'"),
    ('redis://:pw@cache:6379/0', 'redis://:***@cache:6379/0'),
    ('http://[::1]:5000/v3 and sqlite:///cyquota.sqlite',
     'http://[::1]:5000/v3 and sqlite:///cyquota.sqlite'),
    ('user@host: no password', 'user@host: no password'),
    (None, None),
])
def test_mask_url(text, expected):
    assert redaction.mask_url(text) == expected


def test_a_password_with_white_space_is_found_in_its_url():
    assert "p w'd" in redaction.url_passwords("mysql://root:p w'd@h/db")


def test_configured_secrets():
    CONF.set_override('token', 'tok-abcdef', 'enforcement_external')
    CONF.set_override('transport_url', 'rabbit://u:Br0ker-pw@h:5672/')
    CONF.set_override('connection', 'sqlite:///not-secret.db', 'database')
    try:
        found = redaction.configured_secrets(CONF)
    finally:
        CONF.clear_override('token', 'enforcement_external')
        CONF.clear_override('transport_url')
    assert {'tok-abcdef', 'Br0ker-pw'} <= found
    assert not any('not-secret' in secret for secret in found)


def test_the_log_formatter_masks_the_whole_line():
    """The message, and the exception oslo.log appends to it."""
    try:
        raise RuntimeError('cannot reach http://u:pw-in-trace@h/ with '
                           'tok-abcdef')
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord('cyquota', logging.ERROR, __file__, 1,
                               'token %s to %s', ('tok-abcdef',
                                                  'http://u:pw@h/'), exc_info)
    line = redaction.MaskingFormatter(
        logging.Formatter('%(message)s'), {'tok-abcdef'}).format(record)
    assert line.startswith('token *** to http://u:***@h/\nTraceback')
    assert 'RuntimeError: cannot reach http://u:***@h/ with ***' in line
    assert 'pw-in-trace' not in line and 'tok-abcdef' not in line


def test_the_log_formatter_masks_a_message_its_formatter_escapes():
    """A JSON formatter writes a quote as \\": the message is masked before
    it is formatted."""
    record = logging.LogRecord('cyquota', logging.INFO, __file__, 1,
                               'token %s', ('tok"quoted',), None)
    line = redaction.MaskingFormatter(
        oslo_formatters.JSONFormatter(), {'tok"quoted'}).format(record)
    assert json.loads(line)['message'] == 'token ***'


def test_a_database_password_holding_an_at_never_shows():
    """A parser cuts the password at its "@" and its error shows the rest
    as the host's name: that rest is masked too."""
    CONF.set_override('connection', 'postgresql+psycopg://postgres:'
                      'Pa55@w0rd-tail@127.0.0.1:5432/cyquota', 'database')
    db_api.reset()
    try:
        with pytest.raises(SystemExit) as stopped:
            service.check_database()
    finally:
        CONF.clear_override('connection', 'database')
        db_api.reset()
    message = str(stopped.value.code)
    assert "failed to resolve host '***@127.0.0.1'" in message
    assert 'w0rd-tail' not in message and 'Pa55' not in message


def test_placement_errors_are_masked():
    """What reaches a lease's status_reason, the healthcheck and command
    output."""
    CONF.set_override('token', 'Keyst0ne-pw', 'enforcement_external')
    try:
        error = placement_errors.http_error(
            'PUT', '/allocations/c', 409, {'errors': [{
                'code': 'placement.x',
                'detail': 'refused for Keyst0ne-pw at http://u:pw@h/'}]})
        unreachable = placement_errors.PlacementUnreachable(
            'Placement GET /: Unauthorized: Keyst0ne-pw')
    finally:
        CONF.clear_override('token', 'enforcement_external')
    assert error.detail == 'refused for *** at http://u:***@h/'
    assert str(error).endswith(': refused for *** at http://u:***@h/')
    assert str(unreachable) == 'Placement GET /: Unauthorized: ***'


def test_the_one_line_of_a_placement_error_is_masked():
    """What a command prints when the [placement] options cannot make a
    client (keystoneauth's error, on one line)."""
    CONF.set_override('token', 'Keyst0ne-pw', 'enforcement_external')
    try:
        line = placement_errors.one_line('Unauthorized:\n Keyst0ne-pw')
    finally:
        CONF.clear_override('token', 'enforcement_external')
    assert line == 'Unauthorized: ***'


def test_a_service_masks_every_line_its_handlers_write():
    """``service.prepare_service`` wraps each handler's formatter: a
    traceback's secrets are masked as well as the message's."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter('%(levelname)s %(message)s'))
    root = logging.getLogger()
    root.addHandler(handler)
    CONF.set_override('token', 'tok-abcdef', 'enforcement_external')
    try:
        service._mask_logs()
        try:
            raise RuntimeError('refused tok-abcdef')
        except RuntimeError:
            logging.getLogger('cyquota.test').exception(
                'calling http://u:pw@h/')
    finally:
        CONF.clear_override('token', 'enforcement_external')
        root.removeHandler(handler)
    written = stream.getvalue()
    assert written.startswith('ERROR calling http://u:***@h/\nTraceback')
    assert 'RuntimeError: refused ***' in written
    assert 'tok-abcdef' not in written


def _seconds(function, text):
    """The least time of a few calls of ``function(text)``."""
    best = float('inf')
    for _ in range(3):
        started = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - started)
    return best


def _sized(unit, size, last=''):
    return (unit * (size // len(unit) + 1))[:size - len(last)] + last


#: A request line of 256 KB, as a client may send one (waitress's
#: default limit of a request's head).
LINE = 256 * 1024
#: Benign: a long path and query of the usual characters (an "@" at its
#: end: the mask has a URL to look for).
BENIGN_LINE = _sized('/v1/leases/6f1c3a9e-0c1d-4b6e-9a6f-2b1d3c4e5f60'
                     '?limit=1000&marker=abc&', LINE,
                     'by=someone@example.org')


@pytest.mark.parametrize('hostile', [
    _sized('/:', LINE),                   # a path: each "/" a user's lead
    _sized('/:', LINE, '@'),              # ... and an "@" at the end
    _sized('?a=:', LINE, '@x'),           # a query: each "=" a lead
    _sized('/a:b@', LINE),                # a password of "@"s and "/"s
], ids=['path', 'path-at', 'query', 'ats'])
def test_masking_costs_what_a_benign_text_of_its_size_does(hostile):
    """Where the mask backtracked, 8,000 characters of ``/:`` took 1.2 s
    and 256 KB, hours."""
    assert len(hostile) == len(BENIGN_LINE)
    secrets = {'tok-abcdef', 'Br0ker-pw'}
    benign = _seconds(lambda text: redaction.mask(text, secrets),
                      BENIGN_LINE)
    took = _seconds(lambda text: redaction.mask(text, secrets), hostile)
    assert took <= 3 * benign + 0.05, (took, benign)


def test_masking_many_users_costs_time_linear_in_their_number():
    """Words of "/:" between quotes: each a user of its own, tried on its
    own (about a microsecond each, as a word that is a URL costs): twice
    as many cost twice the time."""
    def took(size):
        return _seconds(redaction.mask_url, _sized("'/:", size, '@'))

    assert took(2 * LINE) <= 3 * took(LINE) + 0.02
