def test_reserve_commit_on_sqlite(sqlite_db, ctx):
    from cyquota import quota
    uuids = quota.QUOTAS.reserve(ctx, 'p1', {'FPGA': 2})
    quota.QUOTAS.commit(ctx, 'p1', uuids)
    assert quota.QUOTAS.get_project_usage(ctx, 'p1')['FPGA']['used'] == 2
