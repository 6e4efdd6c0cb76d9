"""A refused snapshot upload failed its task with an HTML page as the
reason: "Image service error (400) on PUT image … data: <html> <head>
<title>400 Bad Request</title> …".

Glance, and Tristate's image API with it, answer errors as webob's HTML
page; the image client took any body that was not JSON as the message, so
the task's fault (what ``openstack server show`` and the action log show)
held the markup. Found in the action log of a failed snapshot (issue 21).
Fixed: common/images/client.py keeps the text after the page's ``<h1>``,
without tags, on one line.
"""

import pytest

from api import server as api_server
from common.images import client as image_client
from tests.functional import api_support


def test_a_refused_upload_says_why_in_plain_text(plane):
    http = api_server.ApiServer(api_support.make_app(plane), port=0)
    http.start()
    try:
        glance = image_client.GlanceClient(http.url + '/image')
        image = glance.create(name='declared-qcow2', disk_format='qcow2',
                              container_format='bare')
        with pytest.raises(image_client.ImageServiceError) as caught:
            glance.upload(image['id'], iter([b'\0' * 65536]))
    finally:
        http.stop()
    message = str(caught.value)
    assert '<' not in message and '\n' not in message, message
    assert message.endswith('Image refused: found raw content (no qcow2 '
                            'header), expected qcow2 content, as '
                            'disk_format says.'), message
