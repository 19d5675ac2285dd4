"""The sample config in the repo shows every cyquota option as it is now."""

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
