"""Blazar's own usage-enforcement filters, run for functional tests.

Blazar comes from PyPI into its own virtualenv, cached between runs in
``~/.cache/cyquota/blazar-venv-<version>`` (``$XDG_CACHE_HOME`` is
honoured). :func:`run_external_service_filter` drives Blazar's
``ExternalServiceFilter`` in a subprocess of that virtualenv, with
Blazar-shaped context and lease dicts (naive ``datetime`` dates), as
Blazar's manager calls it.

When the virtualenv cannot be built, the tests fail under CI (``CI=true``)
and are skipped elsewhere.
"""

import json
import os
import subprocess
import textwrap

from servers import cached_venv

VERSION = os.environ.get('CYQUOTA_TEST_BLAZAR_VERSION', '18.0.0')

# Reads {"base_endpoint", "token", "calls": [[method, *arguments]]} on
# stdin, dates as {"datetime": "<naive ISO 8601>"}; writes one outcome per
# call: "allowed" or the refusal's message.
_DRIVER = textwrap.dedent('''\
    import datetime
    import json
    import sys

    from oslo_config import cfg

    from blazar.enforcement import exceptions
    from blazar.enforcement.filters import external_service_filter

    request = json.load(sys.stdin)
    conf = cfg.ConfigOpts()
    conf([], project='blazar', default_config_files=[])
    external_service_filter.ExternalServiceFilter.register_opts(conf)
    conf.set_override('external_service_base_endpoint',
                      request['base_endpoint'], 'enforcement')
    conf.set_override('external_service_token', request['token'],
                      'enforcement')
    service_filter = external_service_filter.ExternalServiceFilter(conf=conf)


    def dates(value):
        if isinstance(value, dict) and set(value) == {'datetime'}:
            return datetime.datetime.fromisoformat(value['datetime'])
        if isinstance(value, dict):
            return {key: dates(item) for key, item in value.items()}
        if isinstance(value, list):
            return [dates(item) for item in value]
        return value


    outcomes = []
    for method, *arguments in request['calls']:
        try:
            getattr(service_filter, method)(*dates(arguments))
            outcomes.append('allowed')
        except exceptions.ExternalServiceFilterException as error:
            outcomes.append(str(error))
    json.dump(outcomes, sys.stdout)
''')


def venv():
    """The path of Blazar's virtualenv, built on first use."""
    return cached_venv.venv('blazar', VERSION)


def datetime_value(value):
    """A naive UTC ``datetime`` for the driver (Blazar's dates)."""
    return {'datetime': value.replace(tzinfo=None).isoformat()}


def run_external_service_filter(base_endpoint, token, calls):
    """Run Blazar's ExternalServiceFilter on ``calls`` (``[method,
    *arguments]``, dates from :func:`datetime_value`) against
    ``base_endpoint``; returns one outcome per call: ``'allowed'`` or the
    refusal's message."""
    python = venv() / 'bin' / 'python'
    result = subprocess.run(
        [str(python), '-c', _DRIVER], input=json.dumps({
            'base_endpoint': base_endpoint, 'token': token,
            'calls': calls}),
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout)
