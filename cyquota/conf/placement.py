"""[placement] options: device selection, the lease-pool rule, and the
cloud's Placement API as the source of devices.

With ``source = placement`` cyquota reaches the cloud's Placement as Nova
does: keystoneauth's session, auth plugin and adapter options live in this
group too (``auth_type``, ``region_name``, ``valid_interfaces``,
``endpoint_override``, ...).
"""

from oslo_config import cfg

from cyquota import service_client_opts

#: The service type of Placement in the Keystone catalog; keystoneauth also
#: sends the microversion header only for an adapter that names it.
SERVICE_TYPE = 'placement'

placement_group = cfg.OptGroup(
    'placement', title='Device selection and Placement options',
    help='Accelerator devices as Placement-style resource providers: how '
         'allocation candidates are chosen, how lease pools are kept '
         'apart from ordinary requests, and where devices come from '
         '(cyquota\'s own REST or the cloud\'s Placement API).')

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
        'max_allocation_candidates', default=1000, min=-1,
        help='Stop generating allocation candidates after this many (-1: no '
             'cap). Bounds the work and the answer of a request whose groups '
             'combine into very many candidates (N numbered groups of one '
             'unit over D single-unit devices make D!/(D-N)! of them). The '
             'default is the number Nova\'s scheduler asks for '
             '(max_placement_results). A request\'s limit stops the search '
             'sooner.'),
    cfg.StrOpt(
        'source', default='local', choices=[
            ('local', 'Devices are entered through cyquota\'s REST API.'),
            ('placement', 'Devices are read from the cloud\'s Placement '
                          'API, reached with the keystoneauth options of '
                          'this group.')],
        help='Where accelerator devices (resource providers, inventories, '
             'aggregates, traits) come from. With placement, every command '
             'first checks this group\'s options for reaching the cloud\'s '
             'Placement (auth plugin, endpoint, class_map) and stops with '
             'one line naming the option at fault; the conductor copies '
             'every provider with inventory of a mapped class (its tree, '
             'inventories, aggregates, traits and what other consumers use '
             'of it) into cyquota every sync_interval seconds, and '
             'cyquota\'s REST answers 409 to device writes other than '
             'aggregate names and metadata (doc/source/placement.rst).'),
    cfg.IntOpt(
        'sync_interval', default=60, min=1,
        help='Seconds between two copies of the cloud\'s Placement into '
             'cyquota (source = placement), made by one conductor whatever '
             'their number. cyquota-manage devices sync copies at once.'),
    cfg.IntOpt(
        'witness_interval', default=600, min=0,
        help='Seconds between two comparisons of the ledger\'s counts with '
             'the cloud\'s Placement (source = placement; 0: none), made '
             'by one conductor whatever their number: the same comparison '
             'as cyquota-manage quota check --against-placement. Each '
             'difference is a WARNING line of the conductor and counts in '
             'the cyquota_placement_drift gauge; nothing is repaired '
             '(cyquota-manage quota sync --from-placement does).'),
    cfg.BoolOpt(
        'write_leases', default=False,
        help='Write each lease\'s devices to the cloud\'s Placement as an '
             'allocation of consumer = the lease\'s id (its project and '
             'user, consumer type CYQUOTA_LEASE, classes through '
             'class_map) when it starts, and delete that allocation when '
             'it ends, so that Nova\'s scheduler offers them to nobody '
             'else during the lease. A start that Placement refuses '
             'leaves the lease ACTIVE with a status_reason naming the '
             'devices and is tried again every [conductor] '
             'lease_interval, as is any write Placement did not answer. '
             'Needs source = placement. Turned off, cyquota writes '
             'nothing more: allocations of leases active then stay in '
             'Placement until removed there.'),
    cfg.DictOpt(
        'class_map', default={},
        help='cyquota resources whose Placement resource class has another '
             'name, as RESOURCE:PLACEMENT_CLASS pairs (for example '
             'GPU:PGPU,FPGA:CUSTOM_FPGA). A resource not listed has the '
             'class of the same name. Two resources cannot share a class.'),
]


def register_opts(conf):
    service_client_opts.register_group(conf, placement_group, placement_opts,
                                       SERVICE_TYPE)


def list_opts():
    return {placement_group: (placement_opts
                              + service_client_opts.sample_opts(SERVICE_TYPE))}
