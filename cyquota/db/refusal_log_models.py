"""SQLAlchemy model of the refusals log: reserves for a consumer refused
over quota, kept so that they can be found by the consumer.

Nova drops the error body of Cyborg's bind, so the instance whose bind
cyquota refused carries no reason; the row says which limits refused it.
The rows change nothing in the books and are purged with the ended
reservations (``[quota] reservation_retention``).
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types


class Refusal(models.Base):
    """A reserve for a consumer refused over quota (not a dry run)."""

    __tablename__ = 'refusals'
    __table_args__ = (
        # The listings, newest first: by consumer, by project, and the
        # purge by age.
        sa.Index('refusals_consumer_id_idx', 'consumer_id', 'id'),
        sa.Index('refusals_project_id_idx', 'project_id', 'id'),
        sa.Index('refusals_created_at_idx', 'created_at'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(types.identifier(36), nullable=False, unique=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    consumer_id = sa.Column(types.identifier(255), nullable=False)
    request_id = sa.Column(types.identifier(255), nullable=True)
    user_id = sa.Column(types.identifier(255), nullable=True)
    #: The over-quota error's ``overs`` as JSON: ``[{project_id, resource,
    #: scope, limit, used, reserved, requested}]``.
    overs = sa.Column(sa.Text, nullable=False)
    created_at = sa.Column(types.DateTime, nullable=False,
                           default=models.utcnow)
