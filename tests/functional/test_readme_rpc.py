"""README.rst's agent snippet works as written: against a
cyquota-all-in-one on the real RabbitMQ, from another process reading the
same configuration file, as the README tells an agent to."""

import re
import subprocess
import sys

import requests

from servers import api_server
from tests.unit import test_readme

ADMIN = {'X-Roles': 'admin'}


def _snippet():
    """The Python block of "Agents over RPC"."""
    text = dict(test_readme.sections(test_readme.README))['Agents over RPC']
    block = re.search(r'code-block:: python\n\n((?:   .*\n|\n)+)', text)[1]
    return '\n'.join(line[3:] for line in block.splitlines())


def test_the_agent_snippet_reserves_commits_and_releases(tmp_path, rabbit):
    (tmp_path / 'cyquota.conf').write_text(rabbit.config(
        'sqlite:///%s' % (tmp_path / 'cyquota.sqlite')))
    port = api_server.free_port()
    service = subprocess.Popen(
        [sys.executable, '-m', 'cyquota.cmd.all_in_one', '--config-file',
         'cyquota.conf', '--port', str(port)], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = 'http://127.0.0.1:%d' % port
    try:
        api_server.wait_until_serving(url, service)
        # The agent's own attach succeeds.
        agent = 'def attach_the_gpu():\n    pass\n\n' + _snippet()
        result = subprocess.run([sys.executable, '-c', agent], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        usage = requests.get(url + '/v1/quota_usages/demo', headers=ADMIN,
                             timeout=10).json()['quota_usage']
        gpu = usage['resources']['GPU']
        # Reserved, committed (used 1), then released at detach.
        assert (gpu['used'], gpu['reserved']) == (0, 0)
        committed = requests.get(
            url + '/v1/reservations?project_id=demo&status=committed',
            headers=ADMIN, timeout=10).json()['reservations']
        assert {r['resource'] for r in committed} == {'GPU'}
    finally:
        service.terminate()
        assert service.wait(timeout=60) == 0
