"""The rules ``doc/source/architecture.rst`` states hold: each command it
gives with ``# nothing`` after it prints nothing when run from the
repository's root, as a reader would run it."""

import ast
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


def _room(module):
    """The room of a dotted ``cyquota`` module name: its top-level package,
    or the top-level module itself."""
    return '.'.join(module.split('.')[:2])


def _imports_between_rooms():
    """``{room: {rooms it imports}}`` read from every module's imports
    (those inside functions included: a late import is still a
    dependency)."""
    graph = {}
    for folder, _dirs, files in os.walk(os.path.join(ROOT, 'cyquota')):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            room = _room(os.path.relpath(path, ROOT).replace(os.sep, '.'))
            with open(path, encoding='utf-8') as source:
                tree = ast.parse(source.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    targets = ['%s.%s' % (node.module, alias.name)
                               for alias in node.names]
                else:
                    continue
                graph.setdefault(room, set()).update(
                    _room(target) for target in targets
                    if target.startswith('cyquota.')
                    and _room(target) != room)
    return graph


def test_no_cycle_between_the_packages():
    # A room may lean on the floors under it, never on one that leans
    # back on it: each import path between rooms leads one way.
    graph = _imports_between_rooms()
    for start in graph:
        seen, path = set(), [start]
        stack = [iter(sorted(graph[start]))]
        while stack:
            room = next(stack[-1], None)
            if room is None:
                stack.pop()
                path.pop()
                continue
            assert room != start, 'a cycle: %s' % ' -> '.join(path + [room])
            if room not in seen:
                seen.add(room)
                path.append(room)
                stack.append(iter(sorted(graph.get(room, ()))))


#: The most lines a module of the product or its tools may have.
MAX_LINES = 400


def test_no_module_is_over_400_lines():
    over = []
    for top in ('cyquota', 'benchmarks', 'servers', 'simulators'):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    with open(path, encoding='utf-8') as source:
                        lines = sum(1 for _line in source)
                    if lines > MAX_LINES:
                        over.append('%s: %d' % (
                            os.path.relpath(path, ROOT), lines))
    assert over == []
