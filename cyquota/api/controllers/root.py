"""``GET /``: the version document."""

import pecan

from cyquota.api.controllers import v1
from cyquota.api.controllers import versions


class RootController:
    v1 = v1.V1Controller()

    @pecan.expose(generic=True)
    def index(self):
        pecan.abort(405)

    @index.when(method='GET', template='json')
    def get(self):
        return {'versions': [versions.version()]}
