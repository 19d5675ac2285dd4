"""Secrets kept out of what cyquota shows: log lines, errors, command output.

Two masks, applied together by :func:`mask`:

- A URL's credentials (``user:password@``) are masked wherever the URL
  appears (:func:`mask_url`), also in a mistyped URL that no parser accepts
  (``postgresql+psycopg2//postgres:PW@db``): the pattern looks for
  ``user:password@`` after a ``/``, a ``,`` or the start of a word, not for
  a well-formed URL.
- The configured secrets themselves (:func:`configured_secrets`: every
  option oslo.config knows as secret, such as a token or a Keystone
  password, and the passwords inside the configured URLs) are masked
  wherever they appear, whatever characters they hold.

:class:`MaskingFilter` applies both to every log record of a service.
"""

import logging
import re
import urllib.parse

MASK = '***'

#: Configured values shorter than this are not masked as text of their own
#: (a one-letter password would mask every such letter); their URLs still
#: are.
MIN_SECRET_LENGTH = 4

# "user:password@" after a "/", a "," (oslo.messaging's several hosts),
# white space, a quote, "=" or "(": the password is what lies between the
# user's ":" and the "@" before the host. A password may hold "@", "/" and
# "," of its own: it ends at the last "@" before white space, a quote or a
# "," that starts the next host ("user:"). A scheme's "://" is no user's
# ":".
_WORD = r'[^\s/:@\'",]*'
_NEXT_HOST = r',%s:' % _WORD
_CREDENTIALS = re.compile(
    r'(?P<lead>(?:/|^|[\s\'"=(,])%s):(?!//)'
    r'(?P<secret>(?:[^\s/@\'",]|,(?!%s:)|[@/](?=(?:(?!%s)[^\s\'"])*@))*)@'
    % (_WORD, _WORD, _NEXT_HOST))
# A configured URL's password may hold any character (white space, a
# quote): all that lies between the first user's ":" and the last "@".
_LENIENT = re.compile(r'^[^:]*:/*[^:/@]*:(?P<secret>.*)@', re.DOTALL)


def mask_url(text):
    """``text`` with the password of every ``user:password@`` in it
    replaced by ``***``; None stays None."""
    if text is None:
        return None
    return _CREDENTIALS.sub(
        lambda match: '%s:%s@' % (match.group('lead'), MASK), str(text))


def url_passwords(url):
    """The passwords in ``url`` (a URL with one or several hosts, maybe
    mistyped), as written and percent-decoded."""
    found = set()
    for match in _CREDENTIALS.finditer(str(url)):
        secret = match.group('secret')
        found.update((secret, urllib.parse.unquote(secret)))
    lenient = _LENIENT.match(str(url))
    if lenient:
        secret = lenient.group('secret')
        found.update((secret, urllib.parse.unquote(secret)))
    found.discard('')
    return found


def _options(conf):
    """(option, value) of every option of ``conf`` and its groups."""
    # oslo.config lists its option objects only privately (its own
    # log_opt_values reads these too).
    sections = [(None, conf._opts)] + [
        (name, group._opts) for name, group in conf._groups.items()]
    for group, options in sections:
        for name, info in options.items():
            try:
                value = (conf[name] if group is None
                         else conf[group][name])
            except Exception:  # noqa: B902 (an invalid value: not shown)
                continue
            yield info['opt'], value


def configured_secrets(conf):
    """The secret values configured in ``conf``: each option marked
    secret (tokens, passwords) and the passwords inside a URL-valued
    one, at least ``MIN_SECRET_LENGTH`` characters long."""
    found = set()
    for option, value in _options(conf):
        if not option.secret or value is None:
            continue
        # A URL (transport_url, [database] connection) is secret for its
        # password only: the rest names the server, which errors show.
        is_url = 'url' in option.name or 'connection' in option.name
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in map(str, values):
            found.update(url_passwords(item))
            if not is_url:
                found.add(item)
    return {secret for secret in found if len(secret) >= MIN_SECRET_LENGTH}


def mask(text, secrets=()):
    """``text`` with every URL's password (:func:`mask_url`) and every one
    of ``secrets`` replaced by ``***``."""
    text = mask_url(text)
    # The longest first: a secret inside another is masked with it.
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class MaskingFilter(logging.Filter):
    """A log handler's filter that masks every record's message
    (:func:`mask`) before it is formatted.

    :param secrets: the configured secrets to mask besides URLs'
        passwords (:func:`configured_secrets`).
    """

    def __init__(self, secrets=()):
        super().__init__()
        self.secrets = frozenset(secrets)

    def filter(self, record):
        message = record.getMessage()
        masked = mask(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, ()
        return True
