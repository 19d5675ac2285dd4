"""Two conductors roll the same budgets over at once, on PostgreSQL and
MariaDB, in processes of their own: each project's books move to the new
period once, with one refill per budget, and each spent budget is told
once; the books still prove (``budget check``)."""

import datetime
import multiprocessing
import os
import traceback

from oslo_utils import timeutils
import sqlalchemy as sa

from cyquota.budgets import books
from cyquota.budgets import check
from cyquota.budgets import exhaustion
from cyquota.budgets import rollover
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import budget_models
from cyquota.db import api as db_api
from tests import fixtures
from tests.unit import test_budget_books as shared

CONDUCTORS = 2
PROJECTS = ['race-%02d' % number for number in range(40)]
RESOURCES = ('FPGA', 'GPU')
#: The next period, and an hour into it: when the conductors run.
NEXT = shared.START + datetime.timedelta(days=7)
LATER = NEXT + datetime.timedelta(hours=1)
SPAWN = multiprocessing.get_context('spawn')

clock = shared.clock


def _conductor(url, barrier, results):
    """One conductor's roll-over and exhaustion run at ``LATER``, started
    with the others at the barrier."""
    CONF([], project='cyquota', default_config_files=[])
    CONF.set_override('period', 'P7D', 'budgets')
    fixtures.use_database(url, migrate=False)
    timeutils.utcnow = lambda with_timezone=False: LATER
    ctx = cyquota_context.get_admin_context()
    moved = told = 0
    errors = []
    barrier.wait(timeout=120)
    try:
        moved = rollover.roll_all(ctx)
        told = exhaustion.tell(ctx)
    except Exception:
        errors.append(traceback.format_exc())
    results.put({os.getpid(): dict(moved=moved, told=told, errors=errors)})


def test_two_conductors_roll_over_once(backend, db_url, clock, ctx):
    for project in PROJECTS:
        for resource in RESOURCES:
            books.set_budget(ctx, project, resource, 10, 'carry')
    # Half the projects overspend their GPU hours: 25 of 10.
    for project in PROJECTS[1::2]:
        shared.hold(project, 'GPU', 1)
    clock.move(datetime.timedelta(hours=25))
    for project in PROJECTS[1::2]:
        shared.hold(project, 'GPU', 0)

    barrier = SPAWN.Barrier(CONDUCTORS)
    runs = list(fixtures.results_of_workers(
        _conductor, [(db_url, barrier)] * CONDUCTORS).values())
    assert [run['errors'] for run in runs] == [[]] * CONDUCTORS
    assert sum(run['moved'] for run in runs) == len(PROJECTS)

    entries = budget_models.BudgetEntry.__table__
    with db_api.get_engine().connect() as conn:
        refills = conn.execute(
            sa.select(entries.c.project_id, entries.c.resource,
                      sa.func.count())
            .where(entries.c.kind == 'refill',
                   entries.c.period_start == NEXT)
            .group_by(entries.c.project_id, entries.c.resource)).all()
    assert sorted(refills) == [(project, resource, 1)
                               for project in PROJECTS
                               for resource in RESOURCES]
    # The overspent: -15 carried over with 10 more, still spent, told
    # once each.
    assert sum(run['told'] for run in runs) == len(PROJECTS[1::2])
    clock.move(datetime.timedelta(days=7))
    assert check.disagreements(ctx) == []
    assert shared.budget(ctx, PROJECTS[1], 'GPU')['remaining_hours'] == -5
    assert shared.budget(ctx, PROJECTS[0], 'GPU')['remaining_hours'] == 20
