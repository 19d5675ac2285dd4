"""``/v1/aggregates``: aggregate names and metadata (lease pools)."""

import pecan
import webob

from cyquota.api import policy
from cyquota.api.schemas import aggregate as schema
from cyquota.api import validation
from cyquota import exception
from cyquota.placement import aggregates
from cyquota.placement import providers
from cyquota.policies import devices as rules


class AggregateController:
    """``/v1/aggregates/{uuid}``."""

    def __init__(self, uuid):
        self.uuid = uuid

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return aggregates.get(policy.authorized_context(rules.READ),
                              self.uuid)

    @index.when(method='PUT', template='json')
    def put(self):
        context = policy.authorized_context(rules.WRITE)
        if providers.canonical_uuid(self.uuid) is None:
            raise exception.Invalid(
                reason="aggregate uuid must be a UUID, got '%s'" % self.uuid)
        data = validation.json_body(schema.PUT_AGGREGATE)
        created, view = aggregates.put(context, self.uuid, data.get('name'),
                                       data.get('metadata'))
        pecan.response.status = 201 if created else 200
        return view

    @index.when(method='DELETE')
    def delete(self):
        aggregates.delete(policy.authorized_context(rules.WRITE), self.uuid)
        return webob.Response(status=204)


class AggregatesController:
    """``/v1/aggregates``."""

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return {'aggregates': aggregates.get_all(
            policy.authorized_context(rules.READ))}

    @pecan.expose()
    def _lookup(self, uuid, *remainder):
        return AggregateController(uuid), remainder
