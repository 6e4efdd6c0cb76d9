"""``GET /v2/images/{id}/tasks`` answered 404 for every image.

Glance (2.12 on) lists an image's tasks there; Tempest's
``test_create_backup`` waits on it for each backup image ("no tasks" is
done), and got 404 from Tristate's image API, which had no such route.
Found by the Tempest run of issue 22.

Fixed: ``api.image.images.tasks`` answers ``{"tasks": []}`` for an image
the caller can see (uploads here are direct, so no task ever runs), and
404 for one it cannot, as Glance.
"""

from tests.functional.test_image_api import Glance
from tests.functional.test_image_api import server  # noqa: F401 (fixture)


def test_an_image_has_no_tasks_and_another_projects_is_404(server):  # noqa: F811
    owner, stranger = Glance(server), Glance(server)
    image = owner.create(name='tasks')
    resp = owner.call('GET', '/v2/images/%s/tasks' % image['id'])
    assert (resp.status_code, resp.json()) == (200, {'tasks': []})
    assert stranger.call('GET', '/v2/images/%s/tasks'
                         % image['id']).status_code == 404
