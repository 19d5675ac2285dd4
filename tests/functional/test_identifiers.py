"""Identifiers that differ only in case are different identifiers on every
backend, as they are on PostgreSQL: MariaDB's default collation would
make ``CaseA`` and ``casea`` one project and ``R1`` and ``r1`` one request
id. The migrated MariaDB schema compares every identifier column byte for
byte, in tables of the 4-byte character set."""

import datetime

import pytest
import sqlalchemy as sa
import webtest

from cyquota.api import app
from cyquota import context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import types
from cyquota.quota import QUOTAS
from tests.functional import api_callers
from tests import migration_sync

ADMIN = api_callers.ADMIN
START = api_callers.START
member = api_callers.member


@pytest.fixture
def api(backend):
    """The API over the server's database, with a device of 4 FPGAs."""
    http = webtest.TestApp(app.setup_app())
    rp = http.post_json('/v1/resource_providers', {'name': 'dev'},
                        headers=ADMIN).json['uuid']
    http.put_json('/v1/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'FPGA': {'total': 4}}}, headers=ADMIN)
    return http


def test_a_project_differing_in_case_sees_none_of_the_others_lease(api):
    made = api.post_json('/v1/leases', {'lease': {
        'name': 'of CaseA', 'start_date': START.isoformat(),
        'end_date': (START + datetime.timedelta(hours=2)).isoformat(),
        'reservations': [{'resource_type': 'accelerator:FPGA',
                          'amount': 3}]}}, headers=member('CaseA'))
    lease_id = made.json['lease']['id']
    assert [lease['id'] for lease in api.get(
        '/v1/leases', headers=member('CaseA')).json['leases']] == [lease_id]
    assert api.get('/v1/leases', headers=member('casea')).json[
        'leases'] == []
    api.get('/v1/leases/%s' % lease_id, headers=member('casea'),
            status=(403, 404))
    # The promise of CaseA's lease is CaseA's alone (compared in Python:
    # the question is what the database's comparison makes of them).
    with db_api.get_engine().connect() as conn:
        promised = conn.execute(sa.select(
            models.QuotaUsage.project_id, models.QuotaUsage.promised)).all()
    assert sorted(promised) == [('CaseA', 3)]
    assert api.get('/v1/quota_usages/casea', headers=member('casea')).json[
        'quota_usage']['resources']['FPGA']['available'] == (
        api.get('/v1/quota_usages/CaseB', headers=member('CaseB')).json[
            'quota_usage']['resources']['FPGA']['available'])


def _two_request_ids():
    ctxt = context.get_admin_context()
    upper = QUOTAS.reserve(ctxt, 'p1', {'FPGA': 1}, request_id='R1')
    lower = QUOTAS.reserve(ctxt, 'p1', {'FPGA': 1}, request_id='r1')
    assert upper != lower
    # Each is still its own idempotent retry.
    assert QUOTAS.reserve(ctxt, 'p1', {'FPGA': 1}, request_id='R1') == upper
    assert QUOTAS.reserve(ctxt, 'p1', {'FPGA': 1}, request_id='r1') == lower
    assert QUOTAS.get_project_usage(ctxt, 'p1')['FPGA']['reserved'] == 2


def test_request_ids_differing_in_case_are_two_reserves(backend):
    _two_request_ids()


def test_sqlite_keeps_request_ids_differing_in_case_apart(sqlite_db):
    _two_request_ids()


def test_projects_differing_in_case_have_their_own_usage(backend):
    ctxt = context.get_admin_context()
    QUOTAS.reserve(ctxt, 'CaseA', {'FPGA': 2})
    QUOTAS.reserve(ctxt, 'casea', {'FPGA': 1})
    assert QUOTAS.get_project_usage(ctxt, 'CaseA')['FPGA']['reserved'] == 2
    assert QUOTAS.get_project_usage(ctxt, 'casea')['FPGA']['reserved'] == 1


def _identifier_columns():
    migration_sync.import_all_models()
    return [(table.name, column.name) for table in
            models.Base.metadata.sorted_tables for column in table.columns
            if 'mysql' in getattr(column.type, '_variant_mapping', {})
            and isinstance(column.type, sa.String)]


# PostgreSQL compares bytes without a collation: MariaDB's case alone.
@pytest.mark.parametrize('backend', ['mysql'], indirect=True)
def test_mariadb_compares_identifier_columns_byte_for_byte(backend):
    wanted = _identifier_columns()
    assert ('reservations', 'request_id') in wanted
    assert ('leases', 'project_id') in wanted
    with db_api.get_engine().connect() as conn:
        found = dict(((table, column), (charset, collation))
                     for table, column, charset, collation in conn.execute(
            sa.text('SELECT table_name, column_name, character_set_name, '
                    'collation_name FROM information_schema.columns '
                    'WHERE table_schema = DATABASE()')))
        tables = dict(conn.execute(sa.text(
            'SELECT table_name, table_collation FROM '
            'information_schema.tables WHERE table_schema = DATABASE()'))
            .all())
        create = conn.execute(sa.text(
            'SHOW CREATE TABLE reservations')).one()[1]
    assert {key: found[key] for key in wanted} == {
        key: ('utf8mb4', types.BINARY_COLLATION) for key in wanted}
    assert all(collation.startswith('utf8mb4_')
               for collation in tables.values()), tables
    assert ('`request_id` varchar(255) CHARACTER SET utf8mb4 COLLATE '
            'utf8mb4_bin' in create), create
