"""Passwords and configured secrets masked in any text: URLs with one or
several hosts, mistyped ones, passwords of any character."""

import logging
import string

from hypothesis import given
from hypothesis import strategies as st
import pytest

from cyquota.conf import CONF
from cyquota import redaction

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


def test_the_log_filter_masks_the_message(caplog):
    record = logging.LogRecord('cyquota', logging.INFO, __file__, 1,
                               'token %s to %s', ('tok-abcdef',
                                                  'http://u:pw@h/'), None)
    redaction.MaskingFilter({'tok-abcdef'}).filter(record)
    assert record.getMessage() == 'token *** to http://u:***@h/'
