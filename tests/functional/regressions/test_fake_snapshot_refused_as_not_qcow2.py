"""Every snapshot on the fake driver failed with Tristate's own image
service: "Image refused: found raw content (no qcow2 header), expected
qcow2 content".

The conductor creates snapshot and backup images with ``disk_format``
qcow2 (what the libvirt driver writes), and the image API checks uploaded
content against the declared format. The fake driver wrote a raw disk, so
on ``tristate-all`` (fake driver, the API's own ``/image`` as
``[image] service_url``) every ``createImage`` and ``createBackup`` failed
its task and the image never went active. Found while testing snapshots
against an existing Glance (issue 21); no test ran a fake snapshot through
the real image API. Fixed: the fake writes a real (minimal) qcow2 whose
disk holds what the raw one held.
"""

from api import server as api_server
from common import context
from common.db import images as images_db
from tests.functional import api_support


def test_a_fake_snapshot_goes_active_in_the_own_image_service(plane):
    app = api_support.make_app(plane)
    http = api_server.ApiServer(app, port=0)
    http.start()
    try:
        plane.conf.set_override('service_url', http.url + '/image',
                                group='image')
        api = api_support.Api(app, token=api_support.new_project())
        server = api.active()
        resp = api.post('/servers/%s/action' % server['id'],
                        {'createImage': {'name': 'snap'}}, version='2.45')
        assert resp.status_code == 202, resp.get_json()
        api.settled(server['id'])
        image = images_db.get(plane.statedb, context.get_admin_context(),
                              resp.get_json()['image_id'])
        assert (image['status'], image['disk_format']) == ('active', 'qcow2')
        log = api.get('/servers/%s/os-instance-actions'
                      % server['id']).get_json()['instanceActions']
        assert log[0]['tristate:result'] == 'success', log[0]['message']
    finally:
        http.stop()
