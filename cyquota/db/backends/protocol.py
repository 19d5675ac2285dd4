"""What the ledger and the device code ask of a database (``Backend``),
and how a server writes the few expressions that standard SQL leaves to
it (``Spelling``). ``portable.Portable`` is the plain meaning of each;
a server's module (``postgresql``, ``mariadb``, ``sqlite``) implements
the same members faster where it can."""

import typing

import sqlalchemy as sa


class Spelling(typing.Protocol):
    """How a server writes an expression whose standard form it lacks or
    reads otherwise: a matter of meaning, not of speed, so that the plain
    steps keep it (``backends.step_by_step``)."""

    def exact(self, text: sa.ColumnElement) -> sa.ColumnElement:
        """``text``, compared byte for byte whatever the column's
        collation."""

    def remainder(self, dividend: sa.ColumnElement,
                  divisor: sa.ColumnElement) -> sa.ColumnElement:
        """The remainder of two integers."""

    def whole(self, number: sa.ColumnElement) -> sa.ColumnElement:
        """The largest integer not above ``number`` (never negative
        here)."""


class Backend(typing.Protocol):
    """A database as the ledger and the device code use it. Each member
    has a plain meaning (``portable.Portable``); a server's backend
    answers otherwise only where it does the same work faster: the rows
    read and written are the same."""

    #: The backend's name, for logs and tests.
    name: str
    #: How the server writes what standard SQL leaves to it.
    spelling: Spelling

    def __hash__(self) -> int:
        """Callers key what they build by the backend it is for."""

    def prepares(self, dialect: sa.Dialect) -> bool:
        """Whether statements are prepared on ``dialect``'s server
        (``cyquota.db.prepared``), and so whether the ledger runs its
        one statements there (``quota.ledger.one_statement``)."""

    def counts_batch_rows(self, dialect: sa.Dialect) -> bool:
        """Whether one statement run with many parameter sets tells how
        many rows it changed in all (else the caller runs one a set)."""

    def returns_from_update(self, dialect: sa.Dialect) -> bool:
        """Whether an UPDATE may return the rows it changed (else the
        caller locks and reads them, then updates)."""

    def insert_adding(self, table: sa.Table, key: typing.Sequence[str],
                      added: str, touched: typing.Mapping[str, str]
                      ) -> typing.Optional[sa.Insert]:
        """An INSERT into ``table`` that, where a row of the same ``key``
        (the columns of a unique index) is there already, adds the
        inserted ``added`` column to that row's and sets each column of
        ``touched`` to the inserted column it names; None where the
        caller must add row by row (update, else insert)."""

    def through_index(self, select: sa.Select, table: sa.Table,
                      index: str) -> sa.Select:
        """``select`` reading ``table`` through its index ``index``,
        where the server's planner would pick a worse one."""

    def as_written(self, select: sa.Select) -> sa.Select:
        """``select`` joining its tables in the order written, where the
        server's planner would pick a worse order."""
