"""[leases] options: how large a lease may be."""

from oslo_config import cfg

leases_group = cfg.OptGroup(
    'leases', title='Leases',
    help='Leases of accelerators for a time window (doc/source/leases.rst).')

leases_opts = [
    cfg.IntOpt(
        'max_reservations', default=16, min=1,
        help='Reservations one lease may hold. A create with more is '
             'refused with a 400 naming "reservations" before anything is '
             'read, so that no single request can make the device choice '
             'and the window checks arbitrarily long.'),
]


def register_opts(conf):
    conf.register_group(leases_group)
    conf.register_opts(leases_opts, group=leases_group)


def list_opts():
    return {leases_group: leases_opts}
