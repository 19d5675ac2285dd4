"""The sample config in the repo shows every cyquota option as it is now."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / 'etc' / 'cyquota' / 'cyquota.conf.sample'


def _sections(text):
    """{"[group]": body} of a generated config file."""
    parts = re.split(r'^(\[[^\]]+\])$', text, flags=re.M)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


def test_sample_is_current(tmp_path):
    # Only cyquota's own namespace: library help texts change with their
    # releases and are regenerated with "make genconfig".
    out = tmp_path / 'cyquota.conf'
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator', '--namespace',
         'cyquota', '--wrap-width', '79', '--output-file', str(out)],
        check=True, timeout=120)
    committed = _sections(SAMPLE.read_text())
    for group, body in _sections(out.read_text()).items():
        if group == '[DEFAULT]' and not body:
            continue
        assert committed.get(group) == body, (
            '%s in %s is out of date: run "make genconfig"' % (group, SAMPLE))


def test_sample_shows_the_embedded_default():
    assert '#connection = sqlite:///cyquota.sqlite' in SAMPLE.read_text()


def _setup_cfg_entry_point(namespace):
    """The ``oslo.config.opts`` line of setup.cfg naming ``namespace``."""
    text = (ROOT / 'setup.cfg').read_text()
    section = text.split('oslo.config.opts =', 1)[1]
    return re.search(r'^\s+(%s = \S+)$' % re.escape(namespace), section,
                     flags=re.M).group(1)


def test_cyborg_filter_sample_is_current(tmp_path):
    # The namespace as setup.cfg declares it, without reinstalling: a
    # distribution of its own on the path holds the entry point.
    info = tmp_path / 'entry_points' / 'cyquota_filter_sample-0.dist-info'
    info.mkdir(parents=True)
    (info / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: cyquota-filter-sample\nVersion: 0\n')
    (info / 'entry_points.txt').write_text('[oslo.config.opts]\n%s\n' % (
        _setup_cfg_entry_point('cyquota.cyborg_filter')))
    out = tmp_path / 'cyborg-filter.conf'
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(info.parent), os.environ.get('PYTHONPATH', '')]))
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator', '--config-file',
         str(ROOT / 'etc' / 'cyquota'
             / 'cyquota-cyborg-filter-config-generator.conf'),
         '--output-file', str(out)],
        check=True, timeout=120, env=env)
    committed = ROOT / 'etc' / 'cyquota' / 'cyborg-filter.conf.sample'
    assert committed.read_text() == out.read_text(), (
        '%s is out of date: run "make genconfig"' % committed)
