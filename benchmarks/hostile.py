"""Hostile input: what a client's body or request line costs against a
benign one of the same size (SPEC 4.5: nothing a client sends costs more
than linear time, before or after authentication).

In this process, on a throw-away SQLite file (the inputs never reach the
database), each row times a hostile input and a benign one of the same
size, taking turns for several rounds; each figure is the fastest round's:

* ``check_depth``: the JSON depth check that runs on every body before
  any policy check: 1 MB of escaped quotes (``"\\"\\"...``, an unclosed
  string) against 1 MB of one string;
* ``POST /v1/leases``: the same bodies through the WSGI app (noauth), a
  400 each;
* ``mask``: the mask of secrets every log line goes through, on 256 KB:
  a path of ``/:`` (every ``/`` a user's lead), the same with an ``@`` at
  its end, a query of ``=:``, a password of ``@`` and ``/``, against a
  request line of the usual characters; and words of ``/:`` between
  quotes (each a user of its own, about a microsecond each) against
  words that are URLs with a password each;
* ``GET, keystone``: a 256 KB path or query of ``/:`` through the app
  under keystone, without a token: a 401 each, its request log line
  written and masked, against a benign request line.

The target: hostile at most 3 times benign (the unit tests assert it, plus
a few milliseconds).
"""

import logging
import time

import webtest

import benchmarks
from cyquota.api import app
from cyquota.api import validation
from cyquota.conf import CONF
from cyquota import exception
from cyquota import redaction

TITLE = 'Hostile input: a hostile body or request line against a benign one'
COLUMNS = [
    ('where', 'where', '{}'),
    ('input', 'hostile input', '{}'),
    ('size', 'bytes', '{:,}'),
    ('benign', 'benign ms', '{:.2f}'),
    ('hostile', 'hostile ms', '{:.2f}'),
    ('ratio', 'hostile/benign', '{:.2f}'),
]
#: The target of hostile over benign.
TARGET = 3.0
BODY = 1000 * 1000
LINE = 256 * 1024
ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin',
         'Content-Type': 'application/json'}


def _sized(unit, size, last=''):
    return (unit * (size // len(unit) + 1))[:size - len(last)] + last


HOSTILE_BODY = b'"' + b'\\"' * ((BODY - 1) // 2)
BENIGN_BODY = b'{"name": "' + b'x' * (BODY - 12) + b'"}'
BENIGN_LINE = _sized('/v1/leases/6f1c3a9e-0c1d-4b6e-9a6f-2b1d3c4e5f60'
                     '?limit=1000&marker=abc&', LINE,
                     'by=someone@example.org')
MASKED = [
    ('path of /:', _sized('/:', LINE), BENIGN_LINE),
    ('path of /: and @', _sized('/:', LINE, '@'), BENIGN_LINE),
    ('query of =:', _sized('?a=:', LINE, '@x'), BENIGN_LINE),
    ('password of @ and /', _sized('/a:b@', LINE), BENIGN_LINE),
    ("words '/: and @", _sized("'/:", LINE, '@'),
     _sized('rabbit://u:pw@h:5672/ ', LINE)),
]
REQUESTS = [
    ('path of /:', '/v1/limits/' + _sized('/:', LINE - 11)),
    ('query of /:', '/v1/limits?a=' + _sized('/:', LINE - 13)),
]


def run(args, progress):
    """Every row, in a throw-away SQLite file."""
    rounds = 2 if args.quick else 5
    with benchmarks.throwaway_database('sqlite'):
        return _measure(rounds, progress)


def _measure(rounds, progress):
    logging.getLogger('cyquota').setLevel(logging.WARNING)
    noauth = webtest.TestApp(app.setup_app())
    CONF.set_override('auth_strategy', 'keystone', 'api')
    CONF.set_override('www_authenticate_uri', 'http://127.0.0.1:5000/v3',
                      'keystone_authtoken')
    try:
        keystone = webtest.TestApp(app.setup_app())
    finally:
        CONF.clear_override('auth_strategy', 'api')
        CONF.clear_override('www_authenticate_uri', 'keystone_authtoken')
    # The request log's lines are written (and masked) as a service's are.
    logging.getLogger('cyquota.api.requestlog').setLevel(logging.INFO)
    handler = logging.NullHandler()
    handler.setFormatter(redaction.MaskingFormatter(logging.Formatter()))
    logging.getLogger().addHandler(handler)
    cases = [('check_depth', '1 MB of escaped quotes', BODY,
              lambda: _depth(BENIGN_BODY), lambda: _depth(HOSTILE_BODY)),
             ('POST /v1/leases (400)', '1 MB of escaped quotes', BODY,
              lambda: noauth.post('/v1/leases', BENIGN_BODY, headers=ADMIN,
                                  status=400),
              lambda: noauth.post('/v1/leases', HOSTILE_BODY, headers=ADMIN,
                                  status=400))]
    for name, hostile, benign in MASKED:
        cases.append(('mask', name, LINE,
                      lambda text=benign: redaction.mask(text),
                      lambda text=hostile: redaction.mask(text)))
    for name, line in REQUESTS:
        cases.append(('GET, keystone (401)', name, LINE,
                      lambda: keystone.get(BENIGN_LINE, status=401),
                      lambda line=line: keystone.get(line, status=401)))
    try:
        rows = []
        for where, name, size, benign, hostile in cases:
            progress.step('hostile: %s: %s (%d rounds)'
                          % (where, name, rounds))
            times = {'benign': [], 'hostile': []}
            for number in range(rounds):
                order = [('benign', benign), ('hostile', hostile)]
                for kind, call in order[::1 - 2 * (number % 2)]:
                    times[kind].append(_seconds(call))
            row = dict(where=where, input=name, size=size,
                       benign=min(times['benign']) * 1000,
                       hostile=min(times['hostile']) * 1000)
            row['ratio'] = row['hostile'] / row['benign']
            rows.append(row)
        return rows
    finally:
        logging.getLogger().removeHandler(handler)


def _depth(body):
    try:
        validation.check_depth(body)
    except exception.InvalidBody:
        pass


def _seconds(call):
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def summary(rows):
    """Which rows meet the target."""
    over = ['%s: %s (%.1fx)' % (row['where'], row['input'], row['ratio'])
            for row in rows if row['ratio'] > TARGET]
    return ['target: hostile/benign <= %.0f; %s' % (
        TARGET, 'every row meets it' if not over
        else 'over it: ' + '; '.join(over))]


def plot(rows, ax):
    """Hostile and benign milliseconds, a pair of bars a row."""
    x = range(len(rows))
    width = 0.4
    ax.bar([i - width / 2 for i in x], [r['benign'] for r in rows], width,
           label='benign')
    ax.bar([i + width / 2 for i in x], [r['hostile'] for r in rows], width,
           label='hostile')
    ax.set_xticks(list(x), ['%s\n%s' % (r['where'], r['input'])
                            for r in rows], fontsize=6)
    ax.set_ylabel('ms (fastest round)')
    ax.set_yscale('log')
    ax.legend()
