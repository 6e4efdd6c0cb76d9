"""``/identity/v3/...`` under noauth: "no identity service here", as a 403.

openstackclient looks a project (``quota show PROJECT``, ``usage show
--project``, ``server list --project``) or a user up in the identity API
before it calls the compute API. A plane on noauth has no identity API;
pointing openstackclient's ``identity_endpoint_override`` at this prefix
(``/identity/v3``) answers version discovery, any project or user *by ID*
as existing with its ID for a name (noauth's ``USER:PROJECT`` tokens name
them by ID), any other read (lists, searches by name) with 403 and a
message saying why, and a change with 405: openstackclient then takes a
name as the ID, as it does for a member of a real cloud. Only registered when ``[api]
auth_strategy = noauth``; with Keystone, Keystone answers.
"""

import flask

bp = flask.Blueprint('noauth_identity', __name__, url_prefix='/identity')

MESSAGE = ('Tristate runs with [api] auth_strategy = noauth: there is no '
           'identity service, projects and users are named by their IDs '
           '(the X-Auth-Token USER:PROJECT).')


def _version():
    return {'id': 'v3.14', 'status': 'stable',
            'updated': '2020-04-07T00:00:00Z',
            'links': [{'rel': 'self',
                       'href': flask.request.host_url + 'identity/v3/'}],
            'media-types': [{
                'base': 'application/json',
                'type': 'application/vnd.openstack.identity-v3+json'}]}


@bp.get('/', strict_slashes=False)
def versions():
    """Version discovery (keystoneauth reads it first): identity v3."""
    return {'versions': {'values': [_version()]}}


@bp.get('/v3', strict_slashes=False)
def version():
    return {'version': _version()}


@bp.get('/v3/<any(projects, users):kind>/<item_id>')
def named(kind, item_id):
    """A project or user by ID: under noauth any ID is one (the token
    names it), its name is its ID."""
    key = kind[:-1]
    return {key: {'id': item_id, 'name': item_id, 'domain_id': 'default',
                  'enabled': True, 'description': MESSAGE,
                  'links': {'self': flask.request.base_url}}}


@bp.get('/<path:path>')
def refused(path):
    """Any other read: forbidden, as a member of a real cloud is (a
    change is a 405: there is nothing to change)."""
    response = flask.jsonify({'error': {'code': 403, 'title': 'Forbidden',
                                        'message': MESSAGE}})
    response.status_code = 403
    return response
