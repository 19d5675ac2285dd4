"""The enforcement-model protocol: what the ledger asks of a model.

An enforcement model decides what a project may take (``flat``,
``strict_two_level``). The ledger calls every model through
``EnforcementModel``, under its own locks, and never asks which model it
has; a model's part in one transaction is a ``Scope``. Both are
``typing.Protocol`` classes that the models declare they implement, so a
type check holds each model to them (as oslo.limit holds its enforcers to
``_EnforcerImplProtocol``).
"""

import dataclasses
import typing

import sqlalchemy as sa

from cyquota.quota.limits import source as limit_source
from cyquota.quota.limits import write_facts

#: ``{resource: limit}`` (-1: unlimited).
LimitMap = dict[str, int]


@dataclasses.dataclass
class Level:
    """One level a lease is checked at: the project, or its tree.

    :ivar scope: ``project`` or ``tree``, as in ``overs``.
    :ivar holder_id: the project's id, or the tree root's.
    :ivar calendar_key: the ``lease_reservations`` column that groups the
        leases of this level (``project_id`` or ``root_id``).
    :ivar counts: the locked row (``used``, ``reserved``, ``promised``,
        ``leased``), changed in memory.
    :ivar table: the row's table, written by ``id``.
    """

    scope: str
    holder_id: str
    calendar_key: str
    limit: int
    counts: object
    table: object


def over_entry(holder_id, resource, scope, limit, counts, requested):
    """An ``overs`` entry of ``OverQuota`` for ``counts`` (with ``used``,
    ``reserved`` and ``promised``); ``promised``, what pending leases hold
    at their peak, is told when it played a part."""
    entry = dict(project_id=holder_id, resource=resource, scope=scope,
                 limit=limit, used=counts.used, reserved=counts.reserved,
                 requested=requested)
    if counts.promised:
        entry['promised'] = counts.promised
    return entry


def usage_view(limit, used, reserved, leased=0, promised=0):
    """``{limit, used, reserved, leased, promised, available}``:
    available is what an ordinary reserve may still take under ``limit``
    (-1 when unlimited, never below zero); ``leased`` is part of ``used``
    and ``promised`` (the peak of pending leases) must stay free."""
    available = -1 if limit < 0 else max(
        0, limit - used - reserved - promised)
    return {'limit': limit, 'used': used, 'reserved': reserved,
            'leased': leased, 'promised': promised, 'available': available}


@typing.runtime_checkable
class Scope(typing.Protocol):
    """A model's part in one transaction of one project.

    ``usages`` are the project's usage rows (``{resource: row}`` with
    ``used`` and ``reserved``), locked by the ledger.
    """

    @property
    def project_limits(self) -> LimitMap:
        """``{resource: limit}`` the project itself is held to."""

    def track(self, usages: typing.Mapping[str, typing.Any]) -> None:
        """Note the usage rows once the ledger has locked them."""

    def over(self, resource: str, delta: int) -> dict | None:
        """An ``overs`` entry if ``delta`` more breaks the model's rule
        beyond the project's own limit, else None."""

    def write(self, conn: typing.Any,
              usages: typing.Mapping[str, typing.Any]) -> None:
        """Write the model's own rows after the ledger has written the
        usage rows."""

    def report(self, resource: str) -> dict:
        """Extra keys of the project's usage document."""

    def levels(self, resource: str) -> list[Level]:
        """The ``Level``s above the project that a lease is checked at."""


@typing.runtime_checkable
class EnforcementModel(typing.Protocol):
    """What the ledger and the embedded limit store ask of a model."""

    #: The model's name, as ``[quota] enforcement_model`` spells it.
    name: typing.ClassVar[str]
    #: One sentence for ``GET /v1/limits/model``.
    description: typing.ClassVar[str]
    #: True when the project's own usage row and limit alone decide a
    #: reserve, so that one conditional UPDATE per resource may do it.
    decides_by_own_row: typing.ClassVar[bool]
    #: Where the model reads raw limits and the project hierarchy.
    source: limit_source.LimitSource

    def project_limits(self, context: typing.Any, project_id: str,
                       resources: typing.Collection[str]) -> LimitMap:
        """``{resource: limit}`` the project itself is held to."""

    def limit_sql(self) -> sa.ColumnElement | None:
        """The project's limit of one resource as a SQL expression over
        the bind parameters ``_project_id``, ``_resource`` and
        ``_default``, or None."""

    def lock(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str], create: bool) -> Scope:
        """Lock what the model's rule reads beyond the project's own usage
        rows (taken before them, see the ledger's lock order); ``create``
        registers what is missing."""

    def read(self, context: typing.Any, conn: typing.Any, project_id: str,
             resources: typing.Sequence[str]) -> Scope:
        """The same ``Scope`` without locks, for reports."""

    def find_drift(self, context: typing.Any,
                   root_id: str | None = None) -> list:
        """The model's own aggregate rows that disagree with the usage
        rows they sum (none for flat)."""

    def sync(self, context: typing.Any,
             project_id: str | None = None) -> list:
        """Repair the rows ``find_drift`` reports; returns the repairs."""

    def check_parent(self, project_id: str, parent_id: str,
                     grandparent_id: str | None) -> None:
        """Judge placing a project under ``parent_id`` in the embedded
        store (raise to refuse)."""

    def check_limit(self, facts: write_facts.LimitWriteFacts,
                    limit: int | None) -> None:
        """Judge a project limit write (None: removed) on the store's
        facts, read under its locks (raise to refuse)."""

    def check_join(self, facts: write_facts.LimitWriteFacts,
                   parent_id: str) -> None:
        """Judge a new project joining ``parent_id``'s tree (raise to
        refuse)."""
