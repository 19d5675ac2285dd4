"""The examples a user pastes work as written, against a real
cyquota-all-in-one on the embedded default.

Every console block of README.rst and doc/source/osc.rst is either run or
named in ``NOT_RUN`` with the reason. A file's blocks run in document order
in one bash session (so variables carry over, as in a reader's terminal),
in a fresh service's directory, with ``.venv`` the project's virtualenv;
what each ``$`` line prints must be what the document shows, up to uuids,
times and request ids. A shown line ``...`` stands for any lines, a shown
line ending in ``...`` for any line that starts with the rest.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from servers import api_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / 'README.rst'
OSC_DOC = ROOT / 'doc' / 'source' / 'osc.rst'

#: Console blocks not run, by (file, section title), and why.
NOT_RUN = {
    (README, 'Quick start'): 'the two set-up commands: the suite is '
                             'started by one and the service it tests is '
                             'the other',
    (README, 'Usage enforcement'): 'starts a service that runs until '
                                   'stopped; tests/functional/'
                                   'test_policy_example.py runs it',
    (README, "Devices from the cloud's Placement"):
        'needs a real Placement: tests/functional/test_readme_placement.py '
        'runs it',
    (OSC_DOC, 'Installing'): 'installs from PyPI what make run has '
                             'installed already',
}

_PLACEHOLDERS = [
    (re.compile(r'req-[0-9a-f-]{36}'), '<request-id>'),
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                r'[0-9a-f]{12}'), '<uuid>'),
    (re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00'), '<time>'),
]
_TITLE = re.compile(r'^(?:[=-]+\n)?([^\n]+)\n[=-]+\n', re.M)
_CONSOLE = re.compile(r'code-block:: console\n\n((?:   .*\n|\n)+)')


def sections(path):
    """``[(title, text)]`` of a reStructuredText file, in order."""
    text = path.read_text()
    titles = list(_TITLE.finditer(text))
    ends = [match.start() for match in titles[1:]] + [len(text)]
    return [(match.group(1), text[match.end():end])
            for match, end in zip(titles, ends)]


def steps(text):
    """``[(command, shown lines)]`` of the console blocks of ``text``;
    a command continued with ``\\`` is one command."""
    found = []
    for block in _CONSOLE.findall(text):
        continued = False
        for line in block.splitlines():
            line = line[3:]
            if continued:
                found[-1] = (found[-1][0] + '\n' + line, [])
            elif line.startswith('$ '):
                found.append((line[2:], []))
            elif line and found:
                found[-1][1].append(line)
            continued = line.endswith('\\')
    return found


def pasteable(path):
    """The steps of ``path`` that a reader pastes, in order."""
    return [step for title, text in sections(path)
            if (path, title) not in NOT_RUN for step in steps(text)]


def _normal(text):
    for pattern, token in _PLACEHOLDERS:
        text = pattern.sub(token, text)
    return text


def matches(printed, shown):
    """Whether the ``printed`` lines are the ``shown`` ones."""
    if not shown:
        return not printed
    if shown[0] == '...':
        return any(matches(printed[start:], shown[1:])
                   for start in range(len(printed) + 1))
    if not printed:
        return False
    line, expected = printed[0], shown[0]
    same = (line.startswith(expected[:-3]) if expected.endswith('...')
            else line == expected)
    return same and matches(printed[1:], shown[1:])


@pytest.fixture
def all_in_one(tmp_path):
    port = api_server.free_port()
    process = subprocess.Popen(
        [sys.executable, '-m', 'cyquota.cmd.all_in_one', '--port',
         str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    api_server.wait_until_serving('http://127.0.0.1:%d' % port, process)
    # "make run" installs the project into .venv beside the database.
    (tmp_path / '.venv').symlink_to(sys.prefix)
    yield tmp_path, port
    process.terminate()
    assert process.wait(timeout=30) == 0


def run(directory, port, commands, environ=None):
    """What each command printed, run in one bash session, with the
    document's port 6780 replaced by ``port``, its 6781 (a second service
    an example starts) by a free port, and ``environ`` added to the
    session's environment."""
    ports = {'6780': str(port), '6781': str(api_server.free_port())}
    # A terminal shows both streams, in the order they come.
    script = ['set -u', 'exec 2>&1']
    for number, command in enumerate(commands):
        # On a line of its own, also after output without a last newline.
        script.append(r"printf '\n@@step %d\n'" % number)
        for shown in ('localhost:', '127.0.0.1:', '--port '):
            for documented, used in ports.items():
                command = command.replace(shown + documented, shown + used)
        script.append(command)
    session = {name: value for name, value in os.environ.items()
               if not name.startswith('OS_')}
    session.update(environ or {})
    session.update(HOME=str(directory), PATH=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ['PATH']]))
    # An example may show a failure (exit code 1): only an unset variable
    # (set -u) or a syntax error stops the session before its end.
    script.append(r"printf '\n@@end\n'")
    result = subprocess.run(['bash', '-c', '\n'.join(script)],
                            cwd=directory, env=session, capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.endswith('@@end\n'), result.stdout[-2000:]
    printed = re.split(r'^@@step \d+\n', result.stdout[:-len('@@end\n')],
                       flags=re.M)[1:]
    assert len(printed) == len(commands), result.stderr
    return [_normal(output).rstrip('\n').splitlines() for output in printed]


@pytest.mark.parametrize('path', [README, OSC_DOC], ids=lambda p: p.name)
def test_examples_work_as_written(all_in_one, path):
    directory, port = all_in_one
    found = pasteable(path)
    assert len(found) >= 8
    printed = run(directory, port, [command for command, _ in found])
    for (command, shown), output in zip(found, printed):
        assert matches(output, shown), (command, output)


def test_every_console_block_is_run_or_says_why():
    for path in (README, OSC_DOC):
        in_sections = sum(len(_CONSOLE.findall(text))
                          for _title, text in sections(path))
        assert in_sections == len(_CONSOLE.findall(path.read_text())), (
            '%s has a console block before its first title' % path.name)
    for (path, title), why in NOT_RUN.items():
        assert steps(dict(sections(path))[title]), (
            'NOT_RUN names "%s" of %s, which has no example' % (
                title, path.name))


def test_matches_reads_the_wildcards():
    assert matches(['a', 'b', 'c'], ['a', '...'])
    assert matches(['a', 'b', 'c'], ['...', 'c'])
    assert matches(['{"lease": {"id": 1}}'], ['{"lease": ...'])
    assert not matches(['a'], [])
    assert not matches([], ['a'])
    assert not matches(['a', 'b'], ['a', 'c'])
