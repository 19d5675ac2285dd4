"""The interface of a usage-enforcement filter.

A filter is a class registered under an entry point in the
``cyquota.enforcement.filters`` group and enabled by that name in
``[enforcement] enabled_filters``. The chain builds one instance per
process with ``Filter(conf)`` and calls it with the payloads of
:mod:`cyquota.enforcement.payload`: ``context`` is the dict
``{user_id, project_id, auth_url, region_name}`` (``project_id``: the
lease's project) and a lease is the dict ``{id, name, start_date, end_date,
reservations}``. Each filter gets its own copy of them.
"""

import contextlib
import contextvars

from cyquota.conf import CONF
from cyquota import exception

# Log lines of code that has no lease document at hand need the lease's
# id: the chain sets it around each call.
_lease_id = contextvars.ContextVar('cyquota_enforcement_lease_id',
                                   default=None)


def current_lease_id():
    """The id of the lease the chain is checking, for log lines only
    (None outside a chain call, or for a lease that has no id yet)."""
    return _lease_id.get()


@contextlib.contextmanager
def checking_lease(lease_id):
    """Within the block, :func:`current_lease_id` is ``lease_id``."""
    token = _lease_id.set(lease_id)
    try:
        yield
    finally:
        _lease_id.reset(token)


class ConfigError(Exception):
    """The enforcement configuration cannot work: services refuse to start
    with this message (one line, naming the option or filter at fault)."""


class BaseFilter:
    """A usage-enforcement filter; every check allows unless overridden.

    :param conf: the ``oslo_config.cfg.ConfigOpts`` holding the
        ``[enforcement]`` options (cyquota's global ``CONF`` by default).
    :raises ConfigError: (in subclasses) options the filter cannot work
        with; raised when the chain is loaded, so at service start-up.
    """

    #: The filter's entry point name; the ``filter`` of its denials. An
    #: entry point of another name loading this class is a deprecated alias.
    name = None

    def __init__(self, conf=None):
        self.conf = CONF if conf is None else conf

    def check_create(self, context, lease):
        """Allow or refuse (:meth:`deny`) a new lease."""

    def check_update(self, context, current_lease, lease):
        """Allow or refuse (:meth:`deny`) a change of ``current_lease``
        into ``lease``; ``context['user_id']`` is the user updating."""

    def on_end(self, context, lease):
        """Be told that ``lease`` has ended; the end cannot be refused, and
        whatever this raises is only logged."""

    def deny(self, reason):
        """Refuse the request: ``reason`` is the message the user gets."""
        raise exception.EnforcementDenied(filter=self.name, reason=reason)
