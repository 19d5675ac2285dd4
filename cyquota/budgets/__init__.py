"""The books of accelerator-hour budgets (SPEC 3.8): a budget per
(project, resource), its append-only entries and the ``budget_base`` of
its usage row, kept so that for every budget

    ``budget_base == sum(entries of periods <= period_start)
    + closed_meter``

and the remaining balance at ``t`` is ``budget_base - meter(t)``: the sum
of the entries less the open accrual (``meter(t) - closed_meter``).

One concept a module: ``units`` (hours and what a caller may give),
``rows`` (the locked rows of a project's books), ``books`` (set, delete,
credit), ``rollover`` (a period's close and refill, once),
``exhaustion`` (told once a period), ``document`` (what ``GET
/v1/budgets/{project_id}`` and the usage document show), ``entries``
(the entries' pages) and ``check`` (the invariant, budget by budget).

The ledger (``cyquota/quota``) moves the meter and books lease charges;
this room reads the meter (``cyquota.db.meter``) and writes a usage row's
``budget_base`` only when a budget is set, changed, deleted, credited or
refilled. Callers validate project ids and resource names before they
call (the faces do, with the QuotaEngine's validation).
"""
