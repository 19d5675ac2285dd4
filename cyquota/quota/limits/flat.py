"""The flat enforcement model: each project against its own limit."""

import functools
import typing

import sqlalchemy as sa

from cyquota.quota.limits import model
from cyquota.quota.limits import source as limit_source
from cyquota.quota.limits import write_facts


class FlatScope(model.Scope):
    """The flat model's part in a transaction: the project's own limits,
    read when first needed, and nothing to lock, check or write."""

    def __init__(self, enforcement: 'FlatModel', context: typing.Any,
                 project_id: str, resources: typing.Iterable[str]):
        self._read = functools.partial(enforcement.project_limits, context,
                                       project_id, list(resources))

    @functools.cached_property
    def project_limits(self) -> model.LimitMap:
        return self._read()

    def track(self, usages: typing.Mapping[str, typing.Any]) -> None:
        """Nothing beyond the project's rows is kept."""

    def over(self, resource: str, delta: int) -> dict | None:
        """No limit beyond the project's own."""
        return None

    def write(self, conn: typing.Any,
              usages: typing.Mapping[str, typing.Any]) -> None:
        """Nothing beyond the project's rows is kept."""

    def report(self, resource: str) -> dict:
        return {}

    def levels(self, resource: str) -> list[model.Level]:
        """No level above the project."""
        return []


class FlatModel(model.EnforcementModel):
    """A project's limit is its own, else the registered default, else the
    source's limit for unregistered resources; other projects play no
    part, and the project hierarchy sets no rules."""

    name = 'flat'
    description = ('Limit enforcement and validation does not take project '
                   'hierarchy into consideration.')
    decides_by_own_row = True

    def __init__(self, source: limit_source.LimitSource):
        self.source = source

    def project_limits(self, context: typing.Any, project_id: str,
                       resources: typing.Collection[str]) -> model.LimitMap:
        """``{resource: limit}`` that ``project_id`` is held to (-1:
        unlimited)."""
        registered, own = self.source.get_limits(context, project_id,
                                                 resources)
        default = self.source.unregistered_limit
        return {r: own.get(r, registered.get(r, default)) for r in resources}

    def limit_sql(self) -> sa.ColumnElement | None:
        """``project_limits``' rule as a SQL expression over the bind
        parameters ``_project_id``, ``_resource`` and ``_default`` (the
        source's ``unregistered_limit``), or None when the source's limits
        are not in cyquota's database."""
        limits = self.source.sql_limits()
        if limits is None:
            return None
        return sa.func.coalesce(*limits, sa.bindparam('_default'))

    def lock(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str], create: bool) -> FlatScope:
        return FlatScope(self, context, project_id, resources)

    def read(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str]) -> FlatScope:
        return FlatScope(self, context, project_id, resources)

    def find_drift(self, context: typing.Any,
                   root_id: str | None = None) -> list:
        return []

    def sync(self, context: typing.Any,
             project_id: str | None = None) -> list:
        return []

    def check_parent(self, project_id: str, parent_id: str,
                     grandparent_id: str | None) -> None:
        """Any hierarchy is accepted."""

    def check_limit(self, facts: write_facts.LimitWriteFacts,
                    limit: int | None) -> None:
        """Any limit is accepted."""

    def check_join(self, facts: write_facts.LimitWriteFacts,
                   parent_id: str) -> None:
        """Any project may join any parent."""
