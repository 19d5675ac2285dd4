"""The rules ``doc/source/architecture.rst`` states hold: each command it
gives with ``# nothing`` after it prints nothing when run from the
repository's root, as a reader would run it."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOC = os.path.join(ROOT, 'doc', 'source', 'architecture.rst')


def _commands():
    """The doc's commands that must print nothing, continuation lines
    joined."""
    with open(DOC, encoding='utf-8') as doc:
        text = re.sub(r'\\\n\s*', '', doc.read())
    return [match.group(1).strip() for match in re.finditer(
        r'^\s+(grep .*?)#\s*nothing\s*$', text, re.MULTILINE)]


def test_the_doc_states_its_rules():
    assert len(_commands()) >= 8


@pytest.mark.parametrize('command', _commands())
def test_a_rule_of_the_doc_holds(command):
    done = subprocess.run(['bash', '-c', command], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.stderr == ''
    assert done.stdout == '', '%s\nprinted:\n%s' % (command, done.stdout)
