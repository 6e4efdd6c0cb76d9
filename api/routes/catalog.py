"""``/flavors`` (from ``[conductor] flavors``) and ``/os-hypervisors``."""

import flask

from api import request
from api import views
from common import exception

bp = flask.Blueprint('catalog', __name__, url_prefix='/v2.1')


def _flavors(detail):
    request.authorize('tristate:flavors:index')
    links = request.links()
    conf = request.services().conf
    version = request.version()
    return {'flavors': [views.flavor(f, links, detail=detail, version=version)
                        for f in views.flavor_list(conf)]}


@bp.get('/flavors')
def flavors():
    return _flavors(detail=False)


@bp.get('/flavors/detail')
def flavors_detail():
    return _flavors(detail=True)


@bp.get('/flavors/<flavor_id>')
def flavor(flavor_id):
    request.authorize('tristate:flavors:index')
    for flv in views.flavor_list(request.services().conf):
        if flv.name == flavor_id:
            return {'flavor': views.flavor(flv, request.links(),
                                          version=request.version())}
    raise exception.NotFound('Flavor %s could not be found.' % flavor_id)


def _hypervisors(detail):
    request.authorize('tristate:hypervisors:index')
    client, ctx = request.services().client, request.context()
    hosts = client.list_hosts(ctx)
    insts = client.list_instances(ctx, all_projects=True) if detail else []
    version = request.version()
    return {'hypervisors': [views.hypervisor(h, insts, detail=detail,
                                             version=version)
                            for h in sorted(hosts, key=lambda h: h['name'])]}


@bp.get('/os-hypervisors')
def hypervisors():
    return _hypervisors(detail=False)


@bp.get('/os-hypervisors/detail')
def hypervisors_detail():
    return _hypervisors(detail=True)
