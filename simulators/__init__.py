"""Simulated clients of cyquota, run from a checkout: no part of the
shipped ``cyquota`` package, which never imports them.

* ``agent_sim``: accelerator agents over RPC (reserve, attach, commit or
  roll back, release), with failure rates, and a summary table;
  ``python simulators/agent_sim.py --help``.
"""

import pathlib
import sys

#: The command line that runs the agent simulator with this Python,
#: whatever the current directory.
AGENT_SIM = (sys.executable, str(pathlib.Path(__file__).with_name(
    'agent_sim.py')))
