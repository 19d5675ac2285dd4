"""The microversions are one history: 1.0 then one minor version a
change, each on the documentation's page under its own heading, the
default of a request without the header inside the range."""

import pathlib
import re

from cyquota.api import microversion

PAGE = (pathlib.Path(__file__).resolve().parents[3] / 'doc' / 'source'
        / 'reference' / 'microversions.rst')


def test_one_minor_version_a_change_from_1_0():
    versions = [version for version, _change in microversion.HISTORY]
    assert versions == [(1, minor) for minor in range(len(versions))]
    assert (microversion.MIN_VERSION, microversion.MAX_VERSION) == (
        versions[0], versions[-1])


def test_the_default_is_served():
    assert (microversion.MIN_VERSION <= microversion.DEFAULT_VERSION
            <= microversion.MAX_VERSION)


def test_the_page_has_a_heading_a_version():
    text = PAGE.read_text(encoding='utf-8')
    history = text.split('\nHistory\n=======\n', 1)[1]
    headings = re.findall(r'^(\d+\.\d+)\n---+$', history, re.MULTILINE)
    assert headings == [str(version)
                        for version, _change in microversion.HISTORY]
    assert 'serves it at **%s**' % str(microversion.DEFAULT_VERSION) in text
