"""[placement] options: device selection and the lease-pool rule."""

from oslo_config import cfg

placement_group = cfg.OptGroup(
    'placement', title='Device selection options',
    help='Accelerator devices as Placement-style resource providers: how '
         'allocation candidates are chosen and how lease pools are kept '
         'apart from ordinary requests.')

placement_opts = [
    cfg.ListOpt(
        'default_forbidden_member_prefix', default=['reservation:'],
        help='Aggregate metadata key prefixes that mark lease pools. A device '
             'request that carries no member key starting with one of these '
             'prefixes never lands on a provider that is (or whose root '
             'provider is) in an aggregate with a metadata key starting with '
             'one of them. An empty list turns the default exclusion off.'),
    cfg.ListOpt(
        'required_member_prefix', default=['reservation:'],
        help='Member key prefixes that pin a request to its pool: a device '
             'request carrying the member key "reservation:<id>" (with the '
             'default prefix) lands only on providers that are (or whose '
             'root provider is) in an aggregate whose metadata holds that '
             'key.'),
    cfg.BoolOpt(
        'randomize_allocation_candidates', default=False,
        help='Shuffle allocation candidates (or, with a limit, pick a random '
             'sample of them) instead of returning them in provider order. '
             'Device claims always take the first candidate that fits, in '
             'provider order.'),
    cfg.IntOpt(
        'max_allocation_candidates', default=-1, min=-1,
        help='Stop generating allocation candidates after this many (-1: no '
             'cap). Bounds the work of a request whose groups combine into '
             'very many candidates.'),
]


def register_opts(conf):
    conf.register_group(placement_group)
    conf.register_opts(placement_opts, group=placement_group)


def list_opts():
    return {placement_group: placement_opts}
