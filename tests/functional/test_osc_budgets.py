"""``openstack accelerator budget show|set|delete|credit|entries``
against a real ``cyquota-api`` (noauth): an admin sets, changes,
credits and ends a budget; a project's member reads its own budget and
entries and may change nothing; errors are one line and exit code 1."""

from tests.functional.test_osc import _json
from tests.functional.test_osc import as_role  # noqa: F401 (fixture)
from tests.functional.test_osc import migrated  # noqa: F401 (fixture)
from tests.functional.test_osc import noauth  # noqa: F401 (fixture)
from tests.functional.test_osc import openstack  # noqa: F401 (fixture)


def test_budget_set_show_credit_entries_delete(as_role):  # noqa: F811
    admin = as_role('admin')
    [shown] = _json(admin('accelerator', 'budget', 'set', 'budget-p', 'GPU',
                          '--hours', '100', '-f', 'json'))
    assert (shown['Resource'], shown['Hours'], shown['Refill'],
            shown['Cap'], shown['Remaining Hours']) == (
        'GPU', 100.0, 'reset', None, 100.0)

    [shown] = _json(admin('accelerator', 'budget', 'set', 'budget-p', 'GPU',
                          '--hours', '120.5', '--refill', 'carry', '--cap',
                          '200', '-f', 'json'))
    assert (shown['Hours'], shown['Refill'], shown['Cap'],
            shown['Remaining Hours']) == (120.5, 'carry', 200.0, 120.5)

    entry = _json(admin('accelerator', 'budget', 'credit', 'budget-p', 'GPU',
                        '--hours', '4.25', '--reason', 'a demo', '-f',
                        'json'))
    assert (entry['Kind'], entry['Hours'], entry['Actor'],
            entry['Reason']) == ('credit', 4.25, 'alice', 'a demo')

    member = as_role('member', 'budget-p')
    [shown] = _json(member('accelerator', 'budget', 'show', 'budget-p', '-f',
                           'json'))
    assert (shown['Credited Hours'], shown['Remaining Hours']) == (
        4.25, 124.75)
    code, out, _ = member('accelerator', 'budget', 'show', 'budget-p')
    assert code == 0
    assert [cell.strip() for cell in out.splitlines()[1].split('|')[1:-1]][
        :3] == ['Resource', 'Hours', 'Refill']

    entries = _json(member('accelerator', 'budget', 'entries', 'budget-p',
                           '-f', 'json'))
    assert [(e['Kind'], e['Hours']) for e in entries] == [
        ('credit', 4.25), ('refill', 20.5), ('accrual', 0.0),
        ('refill', 100.0)]
    assert [e['Kind'] for e in _json(member(
        'accelerator', 'budget', 'entries', 'budget-p', '--limit', '1',
        '--marker', str(entries[0]['ID']), '-f', 'json'))] == ['refill']

    code, out, err = member('accelerator', 'budget', 'credit', 'budget-p',
                            'GPU', '--hours', '1', '--reason', 'mine')
    assert (code, out) == (1, '')
    assert err.startswith('Policy does not allow cyquota:budgets:credit to '
                          'be performed. (HTTP 403 cyquota.forbidden, ')

    code, out, err = admin('accelerator', 'budget', 'set', 'budget-p', 'GPU',
                           '--hours', '1', '--cap', '2')
    assert (code, out) == (1, '')
    assert err.startswith("Invalid budget: 'cap': only a carry refill has "
                          'a cap; ')

    assert admin('accelerator', 'budget', 'delete', 'budget-p',
                 'GPU') == (0, '', '')
    assert _json(admin('accelerator', 'budget', 'show', 'budget-p', '-f',
                       'json')) == []
    code, _, err = admin('accelerator', 'budget', 'delete', 'budget-p',
                         'GPU')
    assert code == 1
    assert err.startswith('Project budget-p has no budget of GPU. (HTTP 404 '
                          'cyquota.budget_not_found, ')
