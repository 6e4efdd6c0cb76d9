"""The Alembic migrations build exactly the schema the models declare."""

import datetime

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from common.db import api
from common.db import engine
from common.db import migration
from common.db import models


def test_migrations_match_the_models(db):
    with db.engine.connect() as conn:
        context = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True, 'compare_server_default': True})
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []


def test_head_is_current_after_upgrade(db):
    assert migration.head_revision() is not None
    assert migration.current_revision(db) == migration.head_revision()


def test_upgrade_twice_is_harmless(db):
    migration.upgrade(db)
    assert migration.current_revision(db) == migration.head_revision()


def test_0003_counts_the_instances_that_exist(tmp_path):
    """Instances made before quotas existed count from the upgrade on: the
    running ones are billed from then, the hard-deleted ones not at all."""
    database = engine.Database('sqlite:///%s' % (tmp_path / 'old.sqlite'))
    try:
        migration.upgrade(database, '0002')
        table = sa.table('instances', *[sa.column(c) for c in (
            'uuid', 'name', 'project_id', 'user_id', 'flavor_name', 'vcpus',
            'memory_mb', 'disk_gb', 'image_ref', 'vm_state',
            'progress_percent', 'power_state', 'power_seq',
            'user_shutdown_policy', 'crash_policy', 'created_at',
            'updated_at')])
        now = api.utcnow()
        rows = [('a', 'active', 2), ('b', 'stopped', 3),
                ('c', 'hard_deleted', 5)]
        with database.engine.begin() as conn:
            for uuid, state, vcpus in rows:
                conn.execute(sa.insert(table).values(
                    uuid=uuid, name=uuid, project_id='p', user_id='u',
                    flavor_name='f', vcpus=vcpus, memory_mb=vcpus * 100,
                    disk_gb=vcpus, image_ref='i', vm_state=state,
                    progress_percent=0, power_state=0, power_seq=0,
                    user_shutdown_policy='stop', crash_policy='restart',
                    created_at=now, updated_at=now))
        migration.upgrade(database)
        statedb = api.StateDB(database)
        counted = [r for r in rows if r[1] != 'hard_deleted']
        assert statedb.get_quotas('p')['usage'] == {
            'instances': len(counted), 'cores': sum(r[2] for r in counted),
            'ram': sum(r[2] * 100 for r in counted),
            'disk': sum(r[2] for r in counted),
            'lease_hosts': 0, 'lease_hours': 0}
        later = statedb.tenant_usage(
            start=now, end=api.utcnow() + datetime.timedelta(hours=1))['p']
        assert [s['instance_id'] for s in later['server_usages'].values()] \
            == ['a']
    finally:
        database.dispose()


def test_0004_fills_in_the_free_ram_of_existing_hosts(tmp_path):
    """Hosts made before the stored weigher existed get theirs from their
    usage, with ratio 1 until a heartbeat stamps the conductor's."""
    database = engine.Database('sqlite:///%s' % (tmp_path / 'old.sqlite'))
    try:
        migration.upgrade(database, '0003')
        table = sa.table('hosts', *[sa.column(c) for c in (
            'name', 'vcpus', 'memory_mb', 'disk_gb', 'used_vcpus',
            'used_memory_mb', 'used_disk_gb', 'enabled', 'created_at',
            'updated_at')])
        now = api.utcnow()
        with database.engine.begin() as conn:
            for name, used in (('a', 0), ('b', 1536)):
                conn.execute(sa.insert(table).values(
                    name=name, vcpus=8, memory_mb=4096, disk_gb=100,
                    used_vcpus=0, used_memory_mb=used, used_disk_gb=0,
                    enabled=True, created_at=now, updated_at=now))
        migration.upgrade(database)
        statedb = api.StateDB(database)
        assert [(h['name'], h['ram_ratio'], h['free_memory_mb'])
                for h in statedb.list_hosts()] == [('a', 1.0, 4096.0),
                                                   ('b', 1.0, 2560.0)]
    finally:
        database.dispose()


def test_every_migration_downgrades_to_the_one_before(tmp_path):
    """An operator who must go back one release can: each revision's
    downgrade leaves the schema of the revision before, and the upgrade
    then applies again."""
    database = engine.Database('sqlite:///%s' % (tmp_path / 'down.sqlite'))
    try:
        migration.upgrade(database)
        for revision, before in migration.revisions():
            assert migration.current_revision(database) == revision
            migration.downgrade(database, before or 'base')
        assert migration.current_revision(database) is None
        assert sa.inspect(database.engine).get_table_names() == [
            'alembic_version']
        migration.upgrade(database)
        assert migration.current_revision(database) == (
            migration.head_revision())
    finally:
        database.dispose()
