"""Every library that cyquota's code imports is one that setup.cfg
declares, not one that happens to arrive with another package: in
``install_requires``, or for the client plugin (``cyquota/osc``) in the
``osc`` extra."""

import ast
import configparser
import importlib.metadata
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _canonical(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def declared_requirements(extra=None):
    """The distribution names of ``install_requires``, with those of
    ``extra`` if given, canonical form."""
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    lines = config['options']['install_requires'].split('\n')
    if extra:
        lines += config['options.extras_require'][extra].split('\n')
    return {_canonical(re.match(r'[A-Za-z0-9._-]+', line.strip()).group())
            for line in lines if line.strip()}


def imported_modules(package, exclude=None):
    """``{top-level module: first file importing it}`` for every absolute
    import in ``package``, but in the sub-package ``exclude``."""
    found = {}
    for path in sorted((ROOT / package).rglob('*.py')):
        if exclude and (ROOT / exclude) in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split('.')[0],
                                 str(path.relative_to(ROOT)))
    return found


def _undeclared(declared, *package):
    providers = importlib.metadata.packages_distributions()
    undeclared = {}
    for module, where in imported_modules(*package).items():
        if module in sys.stdlib_module_names or module == 'cyquota':
            continue
        distributions = {_canonical(d) for d in providers.get(module, [])}
        if not distributions & declared:
            undeclared[module] = (where, sorted(distributions))
    return undeclared


def test_every_imported_library_is_declared():
    assert _undeclared(declared_requirements(), 'cyquota', 'cyquota/osc') == {}
    assert _undeclared(declared_requirements('osc'), 'cyquota/osc') == {}
