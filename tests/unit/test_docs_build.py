"""The documentation site (``doc/source``) builds without a warning, as
``tox -e docs`` builds it: CI runs only the test suite, so this is where a
page, an option's help or a policy's description that Sphinx cannot read
is caught."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_site_builds_without_warnings(tmp_path):
    # From the repository's root: the configuration and policy references
    # name their generator files relative to it (doc/source/conf.py).
    build = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q',
         '-b', 'html', '-d', str(tmp_path / 'doctrees'),
         'doc/source', str(tmp_path / 'html')],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / 'html' / 'index.html').is_file()
