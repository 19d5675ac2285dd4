"""The flat enforcement model: each project against its own limit."""

from cyquota.conf import CONF


class FlatModel:
    """A project's limit is its own, else the registered default, else
    ``[quota] default_limit``; other projects play no part."""

    name = 'flat'
    description = 'Limit enforcement and validation does not take project ' \
                  'hierarchy into consideration.'

    def __init__(self, source):
        self.source = source

    def project_limits(self, context, project_id, resources):
        """``{resource: limit}`` that ``project_id`` is held to (-1:
        unlimited)."""
        registered, own = self.source.get_limits(context, project_id,
                                                 resources)
        default = CONF.quota.default_limit
        return {r: own.get(r, registered.get(r, default)) for r in resources}
