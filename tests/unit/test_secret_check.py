"""The suite-wide secret check (tests/conftest.py) fails a test whose log
records or output show a secret, and the subprocess helper does too."""

import subprocess
import sys

import pytest

from tests import secrets


def test_a_leaking_test_fails():
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '-p', 'no:randomly', 'tests/unit/secret_leak_examples.py'],
        capture_output=True, text=True, timeout=120)
    out = result.stdout
    assert result.returncode == 1, out
    assert '2 failed, 1 passed' in out, out
    assert ("secret(s) in the log or output of tests/unit/"
            "secret_leak_examples.py::test_logs_the_configured_token (call):"
            " ['tok-example-b7f0-leak']") in out
    assert ("test_prints_a_known_password (call): ['s3cret-pw']") in out


def test_the_helper_fails_on_output_with_a_secret():
    secrets.assert_no_secret('all fine', None)
    with pytest.raises(AssertionError, match='s3cret-pw'):
        secrets.assert_no_secret('ok', 'password s3cret-pw in a traceback')
