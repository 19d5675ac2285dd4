"""[leases] options: how large a lease may be, how long it may last, and
how many leases a project may hold."""

from oslo_config import cfg

leases_group = cfg.OptGroup(
    'leases', title='Leases',
    help='Leases of accelerators for a time window (doc/source/leases.rst).')

#: One year: a lease's longest window unless the operator says otherwise.
DEFAULT_MAX_DURATION = 365 * 24 * 3600

leases_opts = [
    cfg.IntOpt(
        'max_reservations', default=16, min=1,
        help='Reservations one lease may hold. A create with more is '
             'refused with a 400 naming "reservations" before anything is '
             'read, so that no single request can make the device choice '
             'and the window checks arbitrarily long.'),
    cfg.IntOpt(
        'max_leases_per_project', default=1000, min=1,
        help='Leases one project may hold at once: its PENDING and ACTIVE '
             'leases, and its ERROR leases (refused by a usage-enforcement '
             'filter) until their end_date passes. A create past it is '
             'refused with 403 cyquota.lease_limit and stores nothing; the '
             'count is taken under a lock of the project, so concurrent '
             'creates cannot pass it together.'),
    cfg.IntOpt(
        'min_duration', default=60, min=0,
        help='The shortest lease, in seconds from its start_date to its '
             'end_date: a create or update of a shorter one is a 400 naming '
             'end_date. A lease shorter than [conductor] lease_interval may '
             'end before it is started.'),
    cfg.IntOpt(
        'max_duration', default=DEFAULT_MAX_DURATION, min=1,
        help='The longest lease, in seconds from its start_date to its '
             'end_date (a lease exactly this long is allowed), for every '
             'project: a create or update of a longer one is a 400 naming '
             'end_date; an active lease is measured from its original '
             'start. The calendar reads every level\'s windows as far back '
             'as the longest pending lease reaches, so one very long lease '
             'widens the reads of every project. The MaxLeaseDurationFilter '
             '([enforcement] max_lease_duration) can set a smaller maximum, '
             'with exempted projects, and refuses as a filter does.'),
    cfg.IntOpt(
        'max_member_of_entries', default=16, min=1,
        help='Values one reservation\'s member_of may hold (each "U", '
             '"in:U1,U2", "!U" or "!in:U1,U2"); more is a 400 naming the '
             'reservation\'s member_of.'),
    cfg.IntOpt(
        'max_member_of_bytes', default=1024, min=1,
        help='Bytes (UTF-8) of one reservation\'s member_of values in all, '
             'about 27 aggregate UUIDs with the default; more is a 400 naming '
             'the reservation\'s member_of, refused before its values are '
             'parsed. A lease\'s member_of is stored and shown with every '
             'answer about it.'),
]


def register_opts(conf):
    conf.register_group(leases_group)
    conf.register_opts(leases_opts, group=leases_group)


def list_opts():
    return {leases_group: leases_opts}
