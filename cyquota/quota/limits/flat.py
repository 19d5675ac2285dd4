"""The flat enforcement model: each project against its own limit."""

import sqlalchemy as sa


class FlatModel:
    """A project's limit is its own, else the registered default, else the
    source's limit for unregistered resources; other projects play no
    part, and the project hierarchy sets no rules."""

    name = 'flat'
    description = ('Limit enforcement and validation does not take project '
                   'hierarchy into consideration.')
    #: Whether usage is also checked per tree (the driver keeps tree usages).
    hierarchical = False

    def __init__(self, source):
        self.source = source

    def project_limits(self, context, project_id, resources):
        """``{resource: limit}`` that ``project_id`` is held to (-1:
        unlimited)."""
        registered, own = self.source.get_limits(context, project_id,
                                                 resources)
        default = self.source.unregistered_limit
        return {r: own.get(r, registered.get(r, default)) for r in resources}

    def limit_sql(self):
        """``project_limits``' rule as a SQL expression over the bind
        parameters ``_project_id``, ``_resource`` and ``_default`` (the
        source's ``unregistered_limit``), or None when the source's limits
        are not in cyquota's database."""
        limits = self.source.sql_limits()
        if limits is None:
            return None
        return sa.func.coalesce(*limits, sa.bindparam('_default'))

    def check_parent(self, project_id, parent_id, grandparent_id):
        """Any hierarchy is accepted."""

    def check_limit(self, project_id, resource, limit, registered,
                    parent=None, child=None):
        """Any limit is accepted."""
