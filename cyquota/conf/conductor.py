"""[conductor] options, and the embedded default of [DEFAULT] transport_url.

Agents reach the conductors over oslo.messaging. In production that is
RabbitMQ (``transport_url = rabbit://user:pass@host:5672/``); the embedded
default is oslo.messaging's in-process ``fake://`` driver, so the all-in-one
process needs no broker (its client and server must then share the process).
"""

import socket

from oslo_config import cfg
import oslo_messaging
from oslo_messaging import transport as messaging_transport

#: The embedded default: messages stay inside the process.
IN_PROCESS_TRANSPORT_URL = 'fake://'

#: The exchange cyquota's topics live in unless the transport URL names one.
CONTROL_EXCHANGE = 'cyquota'

conductor_group = cfg.OptGroup(
    'conductor', title='Conductor options',
    help='The conductor serves the agents\' quota calls over RPC and runs '
         'the periodic expiry and purge of reservations. Any number of '
         'conductors may serve one database and one topic.')

conductor_opts = [
    cfg.StrOpt(
        'topic', default='cyquota-conductor',
        help='RPC topic the conductors listen on and agents send to. Only '
             'change it to keep several cyquota deployments apart on one '
             'broker.'),
    cfg.StrOpt(
        'host', default=socket.gethostname(),
        sample_default='<hostname>',
        help='Name of this conductor on the message bus (the server part of '
             'its RPC target).'),
    cfg.IntOpt(
        'expire_interval', default=60, min=1,
        help='Seconds between two runs of the periodic task that rolls back '
             'reservations whose expiry has passed. Conductors running it '
             'at the same time never expire a reservation twice.'),
    cfg.IntOpt(
        'lease_interval', default=10, min=1,
        help='Seconds between two runs of the periodic task that starts '
             'pending leases whose start_date has come and ends active '
             'leases whose end_date has come. A lease starts or ends '
             'within one interval of its date, exactly once with several '
             'conductors.'),
    cfg.IntOpt(
        'purge_interval', default=3600, min=1,
        help='Seconds between two runs of the periodic task that deletes '
             'finished reservation rows older than [quota] '
             'reservation_retention.'),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)
    set_defaults()
    # Registered now (oslo.messaging would when making a transport), so the
    # URL can be read and overridden before.
    conf.register_opts(messaging_transport._transport_opts)


def set_defaults():
    """Set cyquota's defaults on oslo.messaging's own options.

    They are set on the option objects (oslo.messaging has no public setter
    for transport_url), so that the sample config shows them too.
    """
    oslo_messaging.set_transport_defaults(CONTROL_EXCHANGE)
    cfg.set_defaults(messaging_transport._transport_opts,
                     transport_url=IN_PROCESS_TRANSPORT_URL)


def list_opts():
    return {conductor_group: conductor_opts}
