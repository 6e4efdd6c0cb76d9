"""``openstack quota show PROJECT`` failed against a plane without Keystone.

openstackclient looks a project up in the identity API before it asks
the compute API for that project's quota, usage or servers (``quota
show|set PROJECT``, ``usage show --project``, ``server list --project``).
A plane on noauth has no identity API: with ``identity_endpoint_override``
at the compute endpoint (the operator guide's advice) the lookup went to
``/v2.1/projects?name=...`` and failed with a 404 ("No Quota found",
"The resource could not be found"), and without it with "Service requires
API version '3'". Found trying issue 22's openstackclient commands against
``tristate-all``.

Fixed: under noauth the API answers ``/identity/v3`` (version discovery;
any project or user by ID exists, named by its ID; anything else 403
saying there is no identity service), and the operator guide points
``identity_endpoint_override`` there.
"""

from tests.functional.test_cli_openstackclient_noauth import PROJECT
from tests.functional.test_cli_openstackclient_noauth import home  # noqa: F401
from tests.functional.test_cli_openstackclient_noauth import osc
from tests.functional.test_cli_openstackclient_noauth import quota
from tests.functional.test_cli_openstackclient_noauth import url  # noqa: F401


def test_quota_of_a_project_by_id_through_openstackclient(home):  # noqa: F811
    osc(home, 'quota', 'set', '--cores', '11', PROJECT)
    assert quota(home, PROJECT)['cores'] == 11
