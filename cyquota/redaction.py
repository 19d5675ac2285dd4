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

Both take time linear in the text, whatever it holds: the text is often a
client's (a request's path in the request log), and a mask that
backtracks would let a request hold a worker for minutes.

:class:`MaskingFormatter` applies both to every log line of a service, as
formatted: the exception and traceback oslo.log appends included.
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
# "," that starts the next host ("user:", once this host had its "@"). A
# scheme's "://" is no user's ":".
#
# Linear time: each part is one way to read the text, so a failed try
# never backtracks more than its own run. The user is a run of name
# characters (without "=" and "(", which lead a user of their own); once
# its ":" is found, the match cannot fail: it takes the password up to the
# host's last "@" (group 2, empty when there is none) and the rest of the
# host (group 3; without an "@", the rest of the word), so no later ":"
# of that host is tried again.
_WORD = r'[^\s/:@\'",]'
# A run of the host's characters after its first "@", "@" included or not:
# up to white space, a quote or a "," that starts the next host.
_HOST = r'[^\s\'",%s]*(?:,(?!%s*:)[^\s\'",%s]*)*'
_CREDENTIALS = re.compile(
    r'((?:^|[/,\s\'"=(])[^\s/:@\'",=(]*:)(?!//)'
    r'((?:[^\s\'"@]*@(?:%s@)?)?)'
    r'((?<=@)%s|(?<!@)[^\s\'"]*)'
    % (_HOST % ('', _WORD, ''), _HOST % ('@', _WORD, '@')))
# A configured URL's password may hold any character (white space, a
# quote): all that lies between the first user's ":" and the last "@".
_LENIENT = re.compile(r'^[^:]*:/*[^:/@]*:(?P<secret>.*)@', re.DOTALL)


def mask_url(text):
    """``text`` with the password of every ``user:password@`` in it
    replaced by ``***``; None stays None."""
    if text is None:
        return None
    text = str(text)
    if '@' not in text:
        return text
    # split, not sub with a function: a text of many short hosts costs no
    # call each.
    pieces = _CREDENTIALS.split(text)
    pieces[2::4] = [secret and MASK + '@' for secret in pieces[2::4]]
    return ''.join(pieces)


def url_passwords(url):
    """The passwords in ``url`` (a URL with one or several hosts, maybe
    mistyped), as written and percent-decoded."""
    found = set()
    secrets = [match.group(2)[:-1]
               for match in _CREDENTIALS.finditer(str(url))]
    lenient = _LENIENT.match(str(url))
    if lenient:
        secrets.append(lenient.group('secret'))
    for secret in secrets:
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
    one (and, of a password holding "@", each part after an "@"), at
    least ``MIN_SECRET_LENGTH`` characters long."""
    found = set()
    for option, value in _options(conf):
        if not option.secret or value is None:
            continue
        # A URL (transport_url, [database] connection) is secret for its
        # password only: the rest names the server, which errors show.
        is_url = 'url' in option.name or 'connection' in option.name
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in map(str, values):
            passwords = url_passwords(item)
            found.update(passwords)
            # A password holding an unencoded "@" is cut at its first "@"
            # by a parser, and its error shows the rest as the host's name.
            for password in passwords:
                found.update(password.split('@')[1:])
            if not is_url:
                found.add(item)
    return {secret for secret in found if len(secret) >= MIN_SECRET_LENGTH}


def mask(text, secrets=()):
    """``text`` with every URL's password (:func:`mask_url`) and every one
    of ``secrets`` replaced by ``***``."""
    text = mask_url(text)
    # Plain text, not a pattern: each secret costs one scan of the text.
    # The longest first: a secret inside another is masked with it.
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class MaskingFormatter(logging.Formatter):
    """A log handler's formatter that masks (:func:`mask`) a record's
    message, then the whole line that ``formatter`` makes of it: the
    exception and traceback appended to it too. (The message first: a
    formatter that escapes it, as JSON does a quote, would hide a secret
    from the mask of the line.)

    :param formatter: the handler's own formatter (logging's default when
        None).
    :param secrets: the configured secrets to mask besides URLs'
        passwords (:func:`configured_secrets`).
    """

    def __init__(self, formatter=None, secrets=()):
        super().__init__()
        self.formatter = formatter or logging.Formatter()
        self.secrets = frozenset(secrets)

    def format(self, record):
        message = record.getMessage()
        masked = mask(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, ()
        return mask(self.formatter.format(record), self.secrets)
