"""Release: take quota off ``used`` at once (a detach), never below zero;
what could not be taken is recorded as drift, not hidden."""

from oslo_utils import uuidutils

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.quota.ledger import consumers
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows
from cyquota.quota import resources as quota_resources


class Release:
    """The release of one enforcement model.

    :param model: the enforcement model (``limits.model``).
    :param devices: the device hook: a consumer left holding nothing gives
        its devices back.
    """

    def __init__(self, model, devices):
        self.model = model
        self.devices = devices

    @db_api.retry_on_conflict
    def __call__(self, context, project_id, deltas, consumer_id=None):
        """Take positive ``deltas`` off ``used``; returns the uuids of the
        committed release rows."""
        resources = list(deltas)
        now = models.utcnow()
        with db_api.writer(context) as session:
            holds_devices = (consumer_id is not None
                             and self.devices.holds(context, consumer_id))
            if holds_devices:
                # Whether the consumer ends up holding nothing depends on
                # all its resources: lock every row of the project.
                resources = sorted(set(resources) | set(
                    quota_resources.known_resources()))
            scope = self.model.lock(context, session, project_id, resources,
                                    create=True)
            usages = usage_rows.lock(session, project_id, resources,
                                     create=True, scope=scope)
            rows = []
            for resource, amount in deltas.items():
                usage = usages[resource]
                applied = usage.take('used', amount)
                if applied < amount:
                    usage_rows.record_drift(
                        session, project_id, resource, consumer_id,
                        'release_below_zero', amount, applied,
                        'release of %d with only %d used'
                        % (amount, applied))
                consumers.add(session, project_id, resource, consumer_id,
                              -amount)
                rows.append(dict(uuid=uuidutils.generate_uuid(),
                                 usage_id=usage.id, project_id=project_id,
                                 resource=resource, delta=-applied,
                                 expire=None, status=models.COMMITTED,
                                 request_id=None, consumer_id=consumer_id,
                                 created_at=now, updated_at=now))
            session.execute(sql.RESERVATIONS.insert(), rows)
            usage_rows.write(session, usages, scope)
            if holds_devices and not consumers.holds(session, project_id,
                                                     consumer_id):
                self.devices.free(context, consumer_id)
        return [row['uuid'] for row in rows]
