"""Answers of ``/v1/budgets``: a project's budgets and their entries, in
hours (JSON numbers, six decimals: exact to the second)."""

from wsme import types as wtypes

from cyquota.api.types import attributes
from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.db import budget_models

_AT_LEAST_0 = {'minimum': 0}


class ResourceBudget(base.APIBase):
    """A budget of one resource, in the period its books are in:
    ``spent_hours`` by attaches, ``charged_hours`` by leases (less their
    refunds), ``credited_hours``, and ``remaining_hours`` now (below zero
    when running attaches overspent it)."""

    hours = base.Field(float, schema=_AT_LEAST_0)
    refill = wtypes.Enum(wtypes.text, *budget_models.REFILLS)
    cap = base.Field(float, nullable=True, schema=_AT_LEAST_0)
    period_start = attributes.DATETIME
    period_end = attributes.DATETIME
    spent_hours = float
    charged_hours = float
    credited_hours = float
    remaining_hours = float
    next_refill = attributes.DATETIME


class Budget(base.APIBase):
    """A project's budgets, by resource (none: not budget-limited)."""

    project_id = wtypes.text
    resources = {wtypes.text: ResourceBudget}


class BudgetResponse(base.APIBase):
    """Answer of ``GET /v1/budgets/{project_id}`` and of ``PUT
    /v1/budgets/{project_id}/{resource}``."""

    budget = Budget


class Entry(base.APIBase):
    """One movement of a budget's balance, never changed: ``hours`` adds
    to it (``refill``, ``credit``, ``lease_refund``) or takes from it
    (negative: ``accrual``, ``lease_charge``; a ``refill`` of a ``reset``
    may be negative too)."""

    id = int
    kind = wtypes.Enum(wtypes.text, *budget_models.ENTRY_KINDS)
    hours = float
    resource = wtypes.text
    period_start = base.Field(
        attributes.DATETIME,
        description='The start of the period the entry counts in.')
    at = attributes.DATETIME
    actor = base.Field(wtypes.text, nullable=True,
                       description='The user who wrote it (null: the '
                                   'conductor).')
    reason = base.Field(wtypes.text, nullable=True)
    lease_id = base.Field(wtypes.text, nullable=True)


class EntryResponse(base.APIBase):
    """Answer of ``POST /v1/budgets/{project_id}/{resource}/credits``."""

    entry = Entry


class EntriesResponse(base.APIBase):
    """Answer of ``GET /v1/budgets/{project_id}/entries``: a page, newest
    first, and a ``next`` link in ``entries_links`` when it is full."""

    entries = [Entry]
    entries_links = base.Field([link.Link], optional=True)
