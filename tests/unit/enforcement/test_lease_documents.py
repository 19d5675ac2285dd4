"""What the lease engine tells a real policy service on 127.0.0.1 when an
admin acts for another project: the context names the lease's project and
the acting user, every call carries the lease's id, and exemption follows
the lease's project."""

import datetime
import json

import pytest

from cyquota.conf import CONF
from cyquota import context
from cyquota import exception
from cyquota import leases
from cyquota.quota import QUOTAS
from tests import enforcement_helpers
from tests.unit.placement.conftest import Tree
from tests.unit.test_engine import START, clock  # noqa: F401,H301

LEASES = leases.LEASES
HOUR = datetime.timedelta(hours=1)


def at(hours):
    return (START + hours * HOUR).isoformat() + '+00:00'


@pytest.fixture
def service(sqlite_db, clock, ctx):  # noqa: F811 (the fixture imported)
    """One device of 4 FPGAs, and ExternalServiceFilter asking a real
    service that allows until told otherwise."""
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev1', parent='cn1', inventory={'FPGA': {'total': 4}})
    QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 4)
    with enforcement_helpers.asked_by_the_leases() as recording:
        yield recording


def admin_of(project_id):
    return context.RequestContext(user_id='admin-user', project_id=project_id,
                                  roles=['admin'], is_admin=True,
                                  overwrite=False)


def create(acting, project_id='lab', end=2, **extra):
    return LEASES.create(acting, project_id, dict(
        start_date=at(1), end_date=at(end), reservations=[
            {'resource_type': 'accelerator:FPGA', 'amount': 1}], **extra))


def sent(service):
    return [(request['path'], json.loads(request['body']))
            for request in service.requests]


def test_an_admin_acting_for_a_project_names_the_lease_project(service):
    admin = admin_of('adminproj')
    made = create(admin, name='run')
    LEASES.update(admin, made['id'], {'name': 'run-2', 'end_date': at(3)})
    LEASES.delete(admin, made['id'])
    calls = sent(service)
    assert [path for path, _ in calls] == [
        '/check-create', '/check-update', '/on-end']
    for _, body in calls:
        assert body['context'] == {'user_id': 'admin-user',
                                   'project_id': 'lab', 'auth_url': None,
                                   'region_name': None}
    (_, created), (_, updated), (_, ended) = calls
    # One id from create to end, though the name changed.
    assert created['lease']['id'] == made['id']
    assert updated['current_lease']['id'] == updated['lease']['id'] == \
        made['id']
    assert (updated['current_lease']['name'], updated['lease']['name']) == (
        'run', 'run-2')
    assert (ended['lease']['id'], ended['lease']['name']) == (
        made['id'], 'run-2')


def test_a_scheduled_end_names_the_lease_creator(service, clock):  # noqa
    member = context.RequestContext(user_id='creator', project_id='lab',
                                    roles=['member'], overwrite=False)
    made = create(member)
    clock.now += 3 * HOUR
    assert LEASES.start_due(context.get_admin_context()) == 1
    assert LEASES.end_due(context.get_admin_context()) == 1
    path, body = sent(service)[-1]
    assert path == '/on-end'
    assert (body['context']['user_id'], body['context']['project_id']) == (
        'creator', 'lab')
    assert body['lease']['id'] == made['id']


def test_exemption_follows_the_lease_project_not_the_caller(service):
    service.answer = (403, b'{"message": "lab is over its budget"}')
    CONF.set_override('exempted_projects', ['adminproj'], 'enforcement')
    LEASES.reset()
    with pytest.raises(exception.EnforcementDenied,
                       match='lab is over its budget'):
        create(admin_of('adminproj'), end=41)
    assert [path for path, _ in sent(service)] == ['/check-create']
    # The exempted project's own leases skip the filters.
    create(admin_of('lab'), project_id='adminproj')
    assert len(service.requests) == 1
