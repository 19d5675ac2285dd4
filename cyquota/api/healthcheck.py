"""The database backend of oslo.middleware's healthcheck (``GET
/healthcheck``), entry point ``cyquota_database`` in the
``oslo.middleware.healthcheck`` group.

It runs ``SELECT 1`` on a connection of cyquota's engine: the answer is
200 ``OK`` while the database answers and 503 with the database's error
class otherwise (the error's text, which may name hosts, only with
``[healthcheck] detailed``, its secrets masked).
"""

from oslo_log import log as logging
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from cyquota.cloud import mirror_state
from cyquota.conf import CONF
from cyquota.conf import middleware as middleware_conf
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import redaction

LOG = logging.getLogger(__name__)


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):
    """Healthy while ``SELECT 1`` succeeds on cyquota's database."""

    def healthcheck(self, server_port):
        try:
            with db_api.get_engine().connect() as conn:
                conn.execute(sa.text('SELECT 1'))
        except Exception as error:  # any driver error: not healthy
            # Masked here, for the answer and the log record alike.
            details = redaction.mask(str(error),
                                     redaction.configured_secrets(CONF))
            LOG.warning('Healthcheck: the database does not answer: %s',
                        details)
            return pluginbase.HealthcheckResult(
                available=False,
                reason='Database unavailable (%s)' % type(error).__name__,
                details=details)
        return pluginbase.HealthcheckResult(available=True,
                                            reason='Database OK',
                                            details=_mirror_detail())


def _mirror_detail():
    """The Placement mirror's age (and last failure), or '' when devices
    are not copied from Placement."""
    if CONF.placement.source != 'placement':
        return ''
    state = mirror_state.read(cyquota_context.get_admin_context())
    if state['age'] is None:
        detail = 'Placement mirror: never synced'
    else:
        detail = 'Placement mirror: last synced %d s ago' % state['age']
    if state['last_error']:
        detail += '; last sync failed: %s' % state['last_error']
    return detail


def warn_if_detailed():
    """Log a WARNING at start when ``[healthcheck] detailed`` shows its
    details to anyone: ``/healthcheck`` answers without authentication
    (load balancers have no token), so only ``allowed_source_ranges``
    keeps them from other callers."""
    middleware_conf.set_defaults(CONF)
    options = CONF.healthcheck
    if options.detailed and not options.allowed_source_ranges:
        LOG.warning(
            '[healthcheck] detailed = true: GET /healthcheck shows the '
            'threads\' stacks, the database\'s errors and the Placement '
            'mirror\'s last failure to anyone who reaches the API, without '
            'authentication; set [healthcheck] allowed_source_ranges to '
            'the load balancers\' addresses, or read the mirror\'s state '
            'from the gauges of GET /metrics instead')
