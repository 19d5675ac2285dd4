"""cyquota-policy-example: serve the example policy with waitress.

    cyquota-policy-example [--host 127.0.0.1] [--port 6790] [--db FILE]
                           [--budget HOURS] [--window SECONDS] [--token T]

Point cyquota at it with ``[enforcement] enabled_filters =
ExternalServiceFilter`` and ``[enforcement_external] endpoint_url =
http://127.0.0.1:6790``. The token can also come from the environment
variable ``CYQUOTA_POLICY_TOKEN`` (kept out of the process list). Runs until
SIGTERM or SIGINT; each decision is logged to stderr.
"""

import argparse
import logging
import os
import signal
import sqlite3
import sys

import waitress

from cyquota.policy_example import app
from cyquota.policy_example import policy
from cyquota.policy_example import store

LOG = logging.getLogger('cyquota.policy_example')

PROG = 'cyquota-policy-example'
TOKEN_VARIABLE = 'CYQUOTA_POLICY_TOKEN'


def _positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError('must be positive: %s' % text)
        return value
    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description='Example usage-enforcement service for cyquota\'s '
                    'ExternalServiceFilter: a budget of accelerator-hours '
                    'per project over a rolling window.')
    parser.add_argument('--host', default='127.0.0.1',
                        help='address to listen on (default %(default)s)')
    parser.add_argument('--port', type=int, default=6790,
                        help='port to listen on, 0 for any free one '
                             '(default %(default)s)')
    parser.add_argument('--db', default='cyquota-policy.sqlite',
                        help='SQLite file of the charges (default '
                             '%(default)s)')
    parser.add_argument('--budget', type=_positive(float), default=168.0,
                        help='accelerator-hours per project per window '
                             '(default %(default)s: one accelerator for a '
                             'week)')
    parser.add_argument('--window', type=_positive(int), default=7 * 86400,
                        help='length of the rolling window in seconds '
                             '(default %(default)s: a week)')
    parser.add_argument('--token', default=os.environ.get(TOKEN_VARIABLE),
                        help='require this X-Auth-Token (default: $%s; '
                             'unset: any caller)' % TOKEN_VARIABLE)
    return parser.parse_args(argv)


def _stop(signum, frame):
    LOG.info('Signal %d received, stopping', signum)
    raise SystemExit(0)


def _fail(reason):
    """One line on stderr, as every cyquota command stops; exit code 1."""
    sys.stderr.write('%s: %s\n' % (PROG, reason))
    return 1


def main(argv=None):
    """Entry point of ``cyquota-policy-example``."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format='%(asctime)s %(levelname)s %(message)s')
    try:
        charges = store.ChargeStore(args.db)
    except sqlite3.Error as error:
        return _fail('cannot open the charges file %s: %s' % (args.db, error))
    accelerator_policy = policy.AcceleratorHoursPolicy(
        charges, args.budget, args.window)
    try:
        server = waitress.create_server(
            app.PolicyApp(accelerator_policy, args.token), host=args.host,
            port=args.port, threads=4, ident='cyquota-policy-example')
    except OSError as error:
        charges.close()
        return _fail('cannot listen on %s:%s: %s' % (
            args.host, args.port, error.strerror or error))
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('cyquota-policy-example serving on http://%s:%s: budget %g '
             'accelerator-hours per project per %d s window, charges in %s, '
             '%s', args.host, server.effective_port, args.budget,
             args.window, args.db,
             'token required' if args.token else 'no token check')
    try:
        server.run()
    finally:
        accelerator_policy.store.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
