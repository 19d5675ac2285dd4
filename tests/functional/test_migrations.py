from tests import migration_sync


def test_schema_matches_models(backend):
    assert migration_sync.schema_differences() == []
