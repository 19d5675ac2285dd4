"""README.rst's Placement walkthrough works as written: its console
blocks run in order in one bash session, as in a reader's terminal,
against a real Placement (the ``placement`` fixture) at
``$PLACEMENT_URL``; what each ``$`` line prints must be what the README
shows (``tests/unit/test_readme.py`` says how lines are compared)."""

import subprocess

import pytest

from servers import api_server
from servers import placement_server
from tests.unit import test_readme

SECTION = "Devices from the cloud's Placement"

pytestmark = pytest.mark.timeout(300)


def test_the_placement_walkthrough_works_as_written(placement, tmp_path):
    placement_server.empty(placement)
    text = dict(test_readme.sections(test_readme.README))[SECTION]
    found = test_readme.steps(text)
    assert len(found) >= 20
    port = api_server.free_port()
    try:
        printed = test_readme.run(tmp_path, port,
                                  [command for command, _ in found],
                                  environ={'PLACEMENT_URL': placement.url})
    finally:
        # The walkthrough's service, should it stop before its last line.
        subprocess.run(['pkill', '-f', '--config-file cloud.conf --port %d'
                        % port], check=False)
    for (command, shown), output in zip(found, printed):
        assert test_readme.matches(output, shown), (command, output)
