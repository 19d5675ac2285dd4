from tests import migration_sync


def test_sqlite_schema_matches_models(sqlite_db):
    assert migration_sync.schema_differences() == []
