"""The conductor's place on the message bus: transport, target, serializer.

One RPC transport serves a whole process (its clients and servers), built
from ``[DEFAULT] transport_url`` on first use: RabbitMQ in production, the
in-process ``fake://`` driver by default, where a client reaches the
servers of its own process only.

Errors cross as oslo.messaging remote exceptions: the server sends a
``cyquota.exception`` error's class (or a device store's,
``cyquota.placement.device_errors``), message and keyword details, and the
client rebuilds it as the same class (``ALLOWED_EXMODS``), so an agent
catches ``exception.OverQuota`` and reads its ``overs`` as if it had called
the QuotaEngine itself.
"""

import datetime
import threading

import oslo_messaging

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota import exception
from cyquota.placement import device_errors

#: Version of the conductor RPC API, on both sides.
API_VERSION = '1.0'

#: Modules whose exceptions a client rebuilds as themselves.
ALLOWED_EXMODS = [exception.__name__, device_errors.__name__]

_LOCK = threading.Lock()
_transport = None


def get_transport():
    """The process's RPC transport (made from the configuration once)."""
    global _transport
    with _LOCK:
        if _transport is None:
            _transport = oslo_messaging.get_rpc_transport(
                CONF, allowed_remote_exmods=ALLOWED_EXMODS)
        return _transport


def reset():
    """Close the transport, so the next use reads the configuration again."""
    global _transport
    with _LOCK:
        transport, _transport = _transport, None
    if transport is not None:
        transport.cleanup()


def target(server=None):
    """The conductors' target: ``[conductor] topic``, API version 1.0, and
    for a server its own name."""
    return oslo_messaging.Target(topic=CONF.conductor.topic, server=server,
                                 version=API_VERSION)


class RequestContextSerializer(oslo_messaging.Serializer):
    """Carries a RequestContext across as its dict and datetimes as ISO 8601
    strings (so an aware ``expire`` keeps its UTC offset); the other
    arguments and results are JSON already."""

    def serialize_entity(self, ctxt, entity):
        if isinstance(entity, datetime.datetime):
            return entity.isoformat()
        return entity

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return cyquota_context.RequestContext.from_dict(ctxt)


def get_client(timeout=None):
    """An RPC client of the conductors; ``timeout`` in seconds, default
    ``[DEFAULT] rpc_response_timeout``."""
    client = oslo_messaging.get_rpc_client(
        get_transport(), target(), serializer=RequestContextSerializer(),
        version_cap=API_VERSION)
    return client.prepare(timeout=timeout)


def get_server(endpoints, host):
    """An RPC server named ``host`` on the conductors' topic; requests run
    in oslo.messaging's threading executor, a pool of ``[DEFAULT]
    executor_thread_pool_size`` threads."""
    return oslo_messaging.get_rpc_server(
        get_transport(), target(server=host), endpoints,
        serializer=RequestContextSerializer(),
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)


def is_in_process():
    """Whether the transport is the embedded in-process one (``fake://``),
    where only servers of this process can answer."""
    return oslo_messaging.TransportURL.parse(CONF).transport == 'fake'
