"""Request contexts (oslo.context) that carry database transactions."""

from oslo_context import context as oslo_context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(oslo_context.RequestContext):
    """A request context on which oslo.db enginefacade transactions nest.

    :param host: the host of the service that sends the request over RPC
                 (an agent's own host name, the one its reports are
                 about): the conductor takes a host's report of its
                 allocations only from a context of that host.
    """

    FROM_DICT_EXTRA_KEYS = ['host']

    def __init__(self, host=None, **kwargs):
        super().__init__(**kwargs)
        self.host = host

    def to_dict(self):
        values = super().to_dict()
        values['host'] = self.host
        return values

    def to_policy_values(self):
        values = dict(super().to_policy_values())
        if values.get('project_id') is None:
            # oslo.policy compares str(None): a caller without a project
            # would own the project named "None". Without the key, no
            # project_id:%(project_id)s check matches.
            values.pop('project_id', None)
        return values


def get_admin_context():
    """A context with the admin role, for internal and operator work."""
    return RequestContext(is_admin=True, roles=['admin'], overwrite=False)
