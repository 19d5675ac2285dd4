"""Request contexts (oslo.context) that carry database transactions."""

from oslo_context import context as oslo_context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(oslo_context.RequestContext):
    """A request context on which oslo.db enginefacade transactions nest."""

    def to_policy_values(self):
        values = super().to_policy_values()
        values['project_id'] = self.project_id
        return values


def get_admin_context():
    """A context with the admin role, for internal and operator work."""
    return RequestContext(is_admin=True, roles=['admin'], overwrite=False)
