"""The paths of budgets of accelerator-hours (microversion 1.8)."""

from cyquota.api.openapi_document import operation as op
from cyquota.api.schemas import budget as budget_schemas
from cyquota.api.types import budget as budget_types

_PROJECT = {'name': 'project_id', 'in': 'path', 'required': True,
            'schema': {'type': 'string'}}
_RESOURCE = {'name': 'resource', 'in': 'path', 'required': True,
             'schema': {'type': 'string'},
             'description': 'A counted resource class (``FPGA``, ``GPU``, '
                            'or one of ``[quota] resources``).'}
_NOT_FOUND = op.error_document(
    'The project has no budget of the resource '
    '(``cyquota.budget_not_found``); below microversion 1.8, the path.')


def paths(components):
    """``{path: path item}`` of the budget calls; answers' types are added
    to ``components`` (a ``wsme_schema.Components``)."""
    shown = components.schema_of(budget_types.BudgetResponse)
    return {
        '/v1/budgets/{project_id}': {
            'parameters': [_PROJECT],
            'get': {
                'operationId': 'showBudgets',
                'summary': "A project's budgets (its readers and members; "
                           'admins).',
                'description': '''\
Each budgeted resource in the period its books are in (periods:
``[budgets] period``, calendar months in UTC by default): its
``hours`` per period, ``refill`` and ``cap``, ``spent_hours``
(attaches, exact to the second), ``charged_hours`` (leases' charges
less refunds), ``credited_hours``, ``remaining_hours`` (now; below
zero when running attaches overspent it) and ``next_refill``. A
project without a budget has no ``resources``.''',
                'responses': op.answers(
                    {'200': op.answer("The project's budgets.", shown)},
                    400, 403)}},
        '/v1/budgets/{project_id}/entries': {
            'parameters': [_PROJECT],
            'get': {
                'operationId': 'listBudgetEntries',
                'summary': "The entries of a project's budgets, newest "
                           'first, paged (its readers and members; '
                           'admins).',
                'description': '''\
Every movement of a balance, never changed once written: ``refill``,
``credit``, ``accrual`` (attaches' use, closed at each period's end
and each change of budget), ``lease_charge`` and ``lease_refund``;
``hours`` is what it adds to the balance (negative: takes). A full
page has an ``entries_links`` ``next`` link; its ``marker`` is the
id of the page's last entry. A marker that names no entry of the
project is a 400 ``marker [<marker>] not found``.''',
                'parameters': op.query(budget_schemas.GET_ENTRIES),
                'responses': op.answers(
                    {'200': op.answer('One page of entries.',
                                      components.schema_of(
                                          budget_types.EntriesResponse))},
                    400, 403)}},
        '/v1/budgets/{project_id}/{resource}': {
            'parameters': [_PROJECT, _RESOURCE],
            'put': {
                'operationId': 'setBudget',
                'summary': "Set or change a project's budget of a resource "
                           '(admin).',
                'description': '''\
A new budget starts full: a ``refill`` entry of ``hours`` in the
current period. A change closes the open accrual (an ``accrual``
entry) and moves this period's balance by the change of ``hours``
(a ``refill`` entry); ``refill`` and ``cap`` apply from the next
period. ``cap`` is only for ``carry`` and at least ``hours``.''',
                'requestBody': op.body(budget_schemas.PUT_BUDGET, example={
                    'hours': 2000, 'refill': 'carry', 'cap': 3000}),
                'responses': op.answers(
                    {'200': op.answer("The project's budgets.", shown)},
                    400, 403, 413, 415, 503)},
            'delete': {
                'operationId': 'deleteBudget',
                'summary': "End a project's budget of a resource (admin).",
                'description': 'Its entries stay; the open accrual and the '
                               'balance are closed, so that a budget set '
                               'again starts afresh.',
                'responses': op.answers({'204': op.NO_CONTENT}, 400, 403,
                                        503, s404=_NOT_FOUND)}},
        '/v1/budgets/{project_id}/{resource}/credits': {
            'parameters': [_PROJECT, _RESOURCE],
            'post': {
                'operationId': 'creditBudget',
                'summary': "Credit hours to a project's budget of a "
                           'resource (admin).',
                'description': "Adds ``hours`` to this period's balance, "
                               'as a ``credit`` entry with the caller as '
                               'its actor and the ``reason``.',
                'requestBody': op.body(budget_schemas.POST_CREDIT, example={
                    'hours': 50, 'reason': 'conference demo'}),
                'responses': op.answers(
                    {'201': op.answer('The entry written.',
                                      components.schema_of(
                                          budget_types.EntryResponse))},
                    400, 403, 413, 415, 503, s404=_NOT_FOUND)}},
    }
