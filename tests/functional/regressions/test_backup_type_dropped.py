"""A backup's ``backup_type`` was dropped: every backup was "daily".

``createBackup`` requires ``backup_type`` (Nova's schema), and the backup
image carries it as a property, which backup rotation matches on (only
backups of the same instance and type rotate together). The API's action
table turned the body into the conductor's parameters without it, so the
conductor recorded the default "daily" for a "weekly" backup, and a
weekly backup with rotation 1 deleted the daily ones. Found while making
rotation work with an existing Glance (issue 21). Fixed: api/actions.py
passes ``backup_type`` on; the conductor's ``backup`` already took it.
"""

from common import context
from common.db import images as images_db
from tests.functional import api_support


def test_a_weekly_backup_is_recorded_weekly(shared_plane):
    api = api_support.Api(api_support.make_app(shared_plane),
                          token=api_support.new_project())
    server = api.active(name='weekly')
    resp = api.post('/servers/%s/action' % server['id'], {'createBackup': {
        'name': 'bk', 'backup_type': 'weekly', 'rotation': 1}},
        version='2.45')
    assert resp.status_code == 202, resp.get_json()
    image = images_db.get(shared_plane.statedb, context.get_admin_context(),
                          resp.get_json()['image_id'])
    assert image['properties']['backup_type'] == 'weekly'
    api.settled(server['id'])
