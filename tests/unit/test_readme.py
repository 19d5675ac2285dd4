"""README.rst's walkthrough works as written, against a real
cyquota-all-in-one on the embedded default.

Every ``$`` line of the walkthrough's console blocks runs in one bash
session (so its variables carry over), in the service's directory; what
each prints must be what the README shows, up to uuids, times and request
ids.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from benchmarks import support

README = pathlib.Path(__file__).resolve().parents[2] / 'README.rst'
_PLACEHOLDERS = [
    (re.compile(r'req-[0-9a-f-]{36}'), '<request-id>'),
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                r'[0-9a-f]{12}'), '<uuid>'),
    (re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00'), '<time>'),
]


def walkthrough(title='Walkthrough'):
    """``[(command, expected output lines)]`` of a walkthrough section."""
    text = README.read_text()
    section = text.split('\n%s\n%s\n' % (title, '=' * len(title)))[1]
    section = re.split(r'\n[^\n]+\n=+\n', section)[0]
    steps = []
    for block in re.findall(r'code-block:: console\n\n((?:   .*\n|\n)+)',
                            section):
        for line in block.splitlines():
            line = line[3:]
            if line.startswith('$ '):
                steps.append((line[2:], []))
            elif line and steps:
                steps[-1][1].append(line)
    return steps


def _normal(text):
    for pattern, token in _PLACEHOLDERS:
        text = pattern.sub(token, text)
    return text


@pytest.fixture
def all_in_one(tmp_path):
    port = support.free_port()
    process = subprocess.Popen(
        [sys.executable, '-m', 'cyquota.cmd.all_in_one', '--port',
         str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    support.wait_until_serving('http://127.0.0.1:%d' % port, process)
    yield tmp_path, port
    process.terminate()
    assert process.wait(timeout=30) == 0


@pytest.mark.parametrize('title', ['Walkthrough', 'Lease walkthrough'])
def test_walkthrough_works_as_written(all_in_one, title):
    directory, port = all_in_one
    steps = walkthrough(title)
    assert len(steps) >= 8
    script = ['set -u']
    for number, (command, _) in enumerate(steps):
        script.append('echo "@@step %d"' % number)
        script.append(command.replace('localhost:6780',
                                      'localhost:%d' % port))
    environ = dict(os.environ, PATH=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ['PATH']]))
    result = subprocess.run(['bash', '-c', '\n'.join(script)],
                            cwd=directory, env=environ, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = re.split(r'^@@step \d+\n', result.stdout, flags=re.M)[1:]
    assert len(printed) == len(steps)
    for (command, expected), output in zip(steps, printed):
        assert _normal(output).splitlines() == expected, command
