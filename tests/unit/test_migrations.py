from tests import fixtures
from tests import migration_sync


def test_sqlite_schema_matches_models(tmp_path):
    # Migrated here, not copied from the session's migrated file
    # (conftest's sqlite_db), so that the migrations themselves run.
    fixtures.use_database('sqlite:///%s' % (tmp_path / 'cyquota.sqlite'))
    assert migration_sync.schema_differences() == []
