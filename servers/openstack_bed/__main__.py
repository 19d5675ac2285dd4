"""Bring the OpenStack test bed up for a person to try:

    python -m servers.openstack_bed --keep [--computes N]
        [--cyquota-filter] [--ledger postgresql|mysql]

prints the URLs, the accounts and an ``export OS_*`` block for the
``openstack`` command, and tears everything down on Ctrl-C. Without
``--keep`` it stops as soon as the bed is up (a check that it starts).
"""

import argparse
import signal
import sys

from servers.openstack_bed import bed as openstack_bed
from servers.openstack_bed import identity


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m servers.openstack_bed',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--keep', action='store_true',
                        help='keep the bed up until Ctrl-C')
    parser.add_argument('--computes', type=int, default=1)
    parser.add_argument('--cyquota-filter', action='store_true',
                        help="cyquota's bind filter in Cyborg's pipeline")
    parser.add_argument('--ledger', choices=('postgresql', 'mysql'),
                        default='postgresql')
    return parser


def describe(bed):
    """The bed's URLs, accounts and an ``export OS_*`` block."""
    lines = ['', 'Endpoints:']
    lines += ['  %-18s %s' % (kind, url) for kind, url in
              sorted(bed.urls.items())]
    lines += ['', 'Accounts (password %s, domain %s):' % (
        identity.PASSWORD, identity.DOMAIN),
        '  admin on project admin',
        '  %s on project %s (member)' % (identity.DEMO_USER,
                                         identity.DEMO_PROJECT),
        '  %s on project %s (admin, service)' % (
            ', '.join(identity.SERVICE_USERS), identity.SERVICE_PROJECT),
        '', 'Logs and configuration: %s' % bed.home, '',
        'export OS_AUTH_URL=%s' % bed.urls['identity'],
        'export OS_IDENTITY_API_VERSION=3',
        'export OS_REGION_NAME=%s' % identity.REGION,
        'export OS_USERNAME=admin',
        'export OS_PASSWORD=%s' % identity.PASSWORD,
        'export OS_PROJECT_NAME=admin',
        'export OS_USER_DOMAIN_NAME=%s' % identity.DOMAIN,
        'export OS_PROJECT_DOMAIN_NAME=%s' % identity.DOMAIN, '']
    return '\n'.join(lines)


def main(argv=None):
    args = _parser().parse_args(argv)
    bed = openstack_bed.Bed(computes=args.computes,
                            cyquota_filter=args.cyquota_filter,
                            ledger=args.ledger)
    # A SIGTERM tears down like Ctrl-C, and Ctrl-C works even when a
    # shell started us in the background (SIGINT ignored).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.default_int_handler)
    try:
        bed.start()
        print(describe(bed), flush=True)
        print('RSS of the bed: %.0f MiB' % (bed.rss_bytes() / 2 ** 20))
        if args.keep:
            print('Up; Ctrl-C tears it down.', flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        print('Tearing down...', file=sys.stderr, flush=True)
        bed.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
