"""The global configuration object of cyquota (oslo.config, project
``cyquota``)."""

from oslo_config import cfg

from cyquota.conf import api
from cyquota.conf import budgets
from cyquota.conf import conductor
from cyquota.conf import cyborg
from cyquota.conf import database
from cyquota.conf import enforcement
from cyquota.conf import leases
from cyquota.conf import metrics
from cyquota.conf import placement
from cyquota.conf import quota

CONF = cfg.CONF

api.register_opts(CONF)
budgets.register_opts(CONF)
conductor.register_opts(CONF)
cyborg.register_opts(CONF)
database.register_opts(CONF)
enforcement.register_opts(CONF)
leases.register_opts(CONF)
metrics.register_opts(CONF)
placement.register_opts(CONF)
quota.register_opts(CONF)
