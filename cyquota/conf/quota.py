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
             'VGPU) or custom ones matching CUSTOM_[A-Z0-9_]+.'),
    cfg.IntOpt(
        'default_limit', default=-1, min=-1,
        help='Limit for a resource that has neither a project limit nor a '
             'registered limit. -1 means unlimited, so that the embedded '
             'quick start works before any limit is set.'),
    cfg.StrOpt(
        'limit_source', default='local', choices=['local'],
        help='Where limits are read: "local" is the embedded store in '
             'cyquota\'s own database.'),
    cfg.StrOpt(
        'enforcement_model', default='flat', choices=['flat'],
        help='Limit enforcement model of the local limit source: "flat" '
             'checks each project against its own limit.'),
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
