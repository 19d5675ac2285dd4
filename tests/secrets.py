"""The secrets the tests configure, and the check that none of them shows
in what a test captured: its log records and output (tests/conftest.py
checks every test's), and a subprocess's output (``assert_no_secret``).

A secret is any value in ``KNOWN`` (those given to processes through
files of their own) and any secret of ``CONF`` now
(``redaction.configured_secrets``).
"""

import logging

from cyquota.conf import CONF
from cyquota import redaction

#: Secrets that tests hand to processes and servers of their own.
KNOWN = frozenset({
    's3cret-pw',              # test_all_in_one_logs.py
    'tok-6f1c3a9e-never-log-me',  # test_enforcement_http.py
    'policy-token-1',         # test_policy_example.py
    'Wr0ng-Secret',           # test_conductor_signals.py
    'S3cr3t-Startup',         # test_startup.py
})

#: The shared RabbitMQ's well-known account: its password is its name.
NOT_SECRET = frozenset({'guest'})


def current():
    """Every secret a test may have configured, now."""
    return (KNOWN | redaction.configured_secrets(CONF)) - NOT_SECRET


def leaked(text, secrets=None):
    """The secrets (default ``current()``) that ``text`` shows."""
    if not text:
        return []
    return sorted(s for s in (current() if secrets is None else secrets)
                  if s in text)


def assert_no_secret(*texts):
    """Fail if any of ``texts`` (a process's output) shows a secret."""
    found = leaked('\n'.join(t for t in texts if t))
    assert not found, 'secret(s) in the output: %s' % found


class LogWatch(logging.Handler):
    """A root handler that keeps every record's message of the running
    test phase, for the check that follows it."""

    def __init__(self):
        super().__init__(level=logging.NOTSET)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: B902 (a malformed record is not a leak)
            pass
        if record.exc_info and record.exc_info[1] is not None:
            self.messages.append(str(record.exc_info[1]))

    def take(self):
        """The messages kept since the last call."""
        messages, self.messages = self.messages, []
        return messages
