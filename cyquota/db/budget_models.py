"""SQLAlchemy models of accelerator-hour budgets (SPEC 3.8): a budget per
(project, resource) and its append-only entries.

Amounts are unit-seconds (an accelerator held one second is 1; an hour
3,600), so every sum is an exact integer; the API shows hours.
"""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.db import types

REFILL_RESET = 'reset'
REFILL_CARRY = 'carry'
REFILLS = (REFILL_RESET, REFILL_CARRY)

#: What a budget covers: its project alone, or (a root's, under
#: strict-two-level) the root and its children, metered on the tree's
#: ``tree_usages`` row.
SCOPE_PROJECT = 'project'
SCOPE_TREE = 'tree'

REFILL = 'refill'
CREDIT = 'credit'
ACCRUAL = 'accrual'
LEASE_CHARGE = 'lease_charge'
LEASE_REFUND = 'lease_refund'
ENTRY_KINDS = (REFILL, CREDIT, ACCRUAL, LEASE_CHARGE, LEASE_REFUND)


class Budget(models.TimestampMixin, models.Base):
    """A project's budget of one resource: ``seconds`` per period, of the
    project alone or of its whole tree (``scope``)."""

    __tablename__ = 'budgets'
    __table_args__ = (
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_budgets0project_id0resource'),
        sa.CheckConstraint('seconds >= 0', name='ck_budgets_seconds'),
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    seconds = sa.Column(sa.BigInteger, nullable=False)
    refill = sa.Column(sa.String(8), nullable=False)
    #: ``project`` or ``tree`` (``SCOPE_*``): which usage row carries its
    #: ``budget_base`` and meter, decided when it is first set.
    scope = sa.Column(sa.String(8), nullable=False,
                      server_default=SCOPE_PROJECT)
    #: The most a ``carry`` refill leaves (None: no cap).
    cap = sa.Column(sa.BigInteger, nullable=True)
    #: The start of the period the books are in (moved on by the
    #: roll-over, once, by one conductor).
    period_start = sa.Column(types.DateTime, nullable=False)
    #: The usage row's meter when the open accrual began (the last closed
    #: accrual entry, or the budget's start).
    closed_meter = sa.Column(sa.BigInteger, nullable=False)
    #: The period whose exhaustion was told (notification, metric), so it
    #: is told once a period.
    exhausted_period = sa.Column(types.DateTime, nullable=True)


class BudgetEntry(models.Base):
    """One movement of a budget's balance, never changed once written:
    ``seconds`` adds to the balance (a refill, credit, refund) or takes
    from it (negative: a closed accrual, a lease's charge)."""

    __tablename__ = 'budget_entries'
    __table_args__ = (
        sa.Index('budget_entries_project_idx', 'project_id', 'id'),
    )

    id = sa.Column(sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                   primary_key=True, autoincrement=True)
    project_id = sa.Column(types.identifier(255), nullable=False)
    resource = sa.Column(types.identifier(255), nullable=False)
    kind = sa.Column(sa.String(16), nullable=False)
    seconds = sa.Column(sa.BigInteger, nullable=False)
    #: The period the entry counts in (a lease's charge of a later period
    #: counts from that period's start).
    period_start = sa.Column(types.DateTime, nullable=False)
    at = sa.Column(types.DateTime, nullable=False)
    actor = sa.Column(sa.String(255), nullable=True)
    reason = sa.Column(sa.String(255), nullable=True)
    lease_id = sa.Column(sa.String(36), nullable=True)
