"""[quota] options: the ledger and where limits come from."""

from oslo_config import cfg

quota_group = cfg.OptGroup(
    'quota', title='Quota options',
    help='The accelerator quota ledger and its limit source.')

quota_opts = [
    cfg.ListOpt(
        'resources', default=[],
        help='Resource classes counted besides the built-in FPGA and GPU: '
             'standard Placement resource class names (for example PGPU, '
             'VGPU) or custom ones matching ``CUSTOM_[A-Z0-9_]+``.'),
    cfg.IntOpt(
        'default_limit', default=-1, min=-1,
        help='Limit for a resource that has neither a project limit nor a '
             'registered limit. -1 means unlimited, so that the embedded '
             'quick start works before any limit is set.'),
    cfg.StrOpt(
        'limit_source', default='local',
        choices=[('local', "the embedded store in cyquota's own database"),
                 ('keystone', 'Keystone unified limits (registered limits, '
                              'project limits, project parents) through '
                              'oslo.limit, configured in [oslo_limit]')],
        help='Where limits are read.'),
    cfg.StrOpt(
        'enforcement_model', default='flat',
        choices=[('flat', 'each project against its own limit'),
                 ('strict-two-level',
                  "each project against its own limit, and each tree (a "
                  "root and its children) against the root's limit")],
        help='Limit enforcement model of the local limit source. The '
             'keystone source uses the model Keystone reports.'),
    cfg.StrOpt(
        'unregistered_resource_strategy', default='require',
        choices=[('require', 'refuse every request for it (a limit of 0)'),
                 ('ignore', 'leave it unlimited')],
        help='With the keystone source, what a resource without a '
             'registered limit in Keystone gets.'),
    cfg.StrOpt(
        'keystone_resource_name_format', default='class:{resource}',
        help='How a resource class maps to a Keystone unified limit '
             'resource name; {resource} is the class (FPGA, GPU, ...). The '
             'default matches the names Nova uses for the same '
             'accelerators.'),
    cfg.StrOpt(
        'limit_cache_url', default=None,
        help='redis:// URL of a limit cache shared by every cyquota '
             'process. Unset (the default): no cache, every check reads '
             'limits from their source. The local source invalidates the '
             'cache on every limit write.'),
    cfg.IntOpt(
        'limit_cache_ttl', default=60, min=1,
        help='Seconds a cached limit lives. It bounds how long a limit '
             'changed in Keystone can go unseen; local limits are '
             'invalidated at once on every write.'),
    cfg.IntOpt(
        'reservation_expire', default=86400, min=1,
        help='Seconds until a reservation expires when the caller gives no '
             'expiry. An expired reservation is rolled back by the periodic '
             'expiry task.'),
    cfg.IntOpt(
        'reservation_retention', default=7 * 86400, min=0,
        help='Seconds that committed, rolled back and expired reservation '
             'rows are kept, so that a retried commit or rollback is answered '
             'correctly. Older rows are purged.'),
    cfg.IntOpt(
        'batch_size', default=500, min=1,
        help='Rows handled per transaction by expiry, purge and quota sync.'),
    cfg.IntOpt(
        'db_max_retries', default=20, min=0,
        help='How often a ledger transaction is retried after a deadlock, '
             'a lost race on a new row, or a lost database connection.'),
]


def register_opts(conf):
    conf.register_group(quota_group)
    conf.register_opts(quota_opts, group=quota_group)


def list_opts():
    return {quota_group: quota_opts}
