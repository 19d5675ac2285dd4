"""The flat enforcement model: each project against its own limit."""

import functools

import sqlalchemy as sa


class FlatScope:
    """The flat model's part in a transaction: the project's own limits,
    read when first needed, and nothing to lock, check or write."""

    def __init__(self, model, context, project_id, resources):
        self._read = functools.partial(model.project_limits, context,
                                       project_id, list(resources))

    @functools.cached_property
    def project_limits(self):
        return self._read()

    def track(self, usages):
        """Nothing beyond the project's rows is kept."""

    def over(self, resource, delta):
        """No limit beyond the project's own."""
        return None

    def write(self, conn, usages):
        """Nothing beyond the project's rows is kept."""

    def report(self, resource):
        return {}

    def levels(self, resource):
        """No level above the project."""
        return []


class FlatModel:
    """A project's limit is its own, else the registered default, else the
    source's limit for unregistered resources; other projects play no
    part, and the project hierarchy sets no rules."""

    name = 'flat'
    description = ('Limit enforcement and validation does not take project '
                   'hierarchy into consideration.')
    decides_by_own_row = True

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

    def lock(self, context, conn, project_id, resources, create):
        return FlatScope(self, context, project_id, resources)

    def read(self, context, conn, project_id, resources):
        return FlatScope(self, context, project_id, resources)

    def find_drift(self, context, root_id=None):
        return []

    def sync(self, context, project_id=None):
        return []

    def check_parent(self, project_id, parent_id, grandparent_id):
        """Any hierarchy is accepted."""

    def check_limit(self, facts, limit):
        """Any limit is accepted."""

    def check_join(self, facts, parent_id):
        """Any project may join any parent."""
