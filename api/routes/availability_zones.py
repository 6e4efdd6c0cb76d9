"""``/v2.1/os-availability-zone``: Nova's zone list (everyone) and its
detail (admins).

    GET /os-availability-zone          {"availabilityZoneInfo": [{"zoneName",
                                        "zoneState": {"available"}, "hosts": null}]}
    GET /os-availability-zone/detail   ... "hosts": {host: {binary:
                                        {"available", "active", "updated_at"}}}

As Nova builds them from its services (api/routes/services.py): a zone is
available when an enabled service is in it, not available when only
disabled ones are; the list hides ``[DEFAULT]
internal_service_availability_zone`` (the conductors'), the detail shows
it with the conductors, and every available zone with its enabled
services (``available``: up, ``active``: enabled). Zones are sorted by
name, available ones first.

:func:`requested` reads the zone of a POST /servers.
"""

import logging

import flask

from api import request
from api.routes import services as services_routes
from common import exception

LOG = logging.getLogger(__name__)

bp = flask.Blueprint('availability_zones', __name__,
                     url_prefix='/v2.1/os-availability-zone')
LIST_RULE = 'tristate:availability_zone:list'
DETAIL_RULE = 'tristate:availability_zone:detail'


def zones(records):
    """(available, not available): sorted zone names of ``records``."""
    available = {r['zone'] for r in records if r['status'] == 'enabled'}
    unavailable = {r['zone'] for r in records
                   if r['status'] != 'enabled'} - available
    return sorted(available), sorted(unavailable)


def _entry(zone, available, hosts=None):
    return {'zoneName': zone, 'zoneState': {'available': available},
            'hosts': hosts}


@bp.get('', strict_slashes=False)
def index():
    request.authorize(LIST_RULE)
    internal = request.services().conf.internal_service_availability_zone
    available, unavailable = zones(services_routes.all_services())
    return {'availabilityZoneInfo': [
        _entry(z, True) for z in available if z != internal] + [
        _entry(z, False) for z in unavailable if z != internal]}


@bp.get('/detail')
def detail():
    request.authorize(DETAIL_RULE)
    records = services_routes.all_services()
    available, unavailable = zones(records)
    found = []
    for zone in available:
        hosts = {}
        for record in records:
            if record['zone'] != zone or record['status'] != 'enabled':
                continue
            hosts.setdefault(record['host'], {})[record['binary']] = {
                'available': record['state'] == 'up', 'active': True,
                'updated_at': record['updated_at']}
        found.append(_entry(zone, True, hosts))
    found += [_entry(z, False) for z in unavailable]
    return {'availabilityZoneInfo': found}


# --- the zone a boot request asks for ------------------------------------------

def _parse(text):
    """Nova's ``zone``, ``zone:host``, ``zone::node``, ``zone:host:node``:
    (zone or None, host or None, node or None)."""
    host = node = None
    count = text.count(':')
    if count == 1:
        text, host = text.split(':')
    elif count == 2:
        if '::' in text:
            text, node = text.split('::')
        else:
            text, host, node = text.split(':')
    elif count:
        raise exception.Invalid('Invalid input received: Unable to parse '
                                'availability_zone')
    return text or None, host or None, node or None


def requested(text):
    """(zone, forced host) of a POST /servers ``availability_zone``, as
    Nova reads it: a forced host (``zone:host``, or ``zone::node``: a node
    is a host here) needs the ``create:forced_host`` rule (admins) and
    keeps the zone only if the host is in it; a zone alone must be one an
    enabled host is in (400 otherwise)."""
    if text is None:
        return None, None
    zone, host, node = _parse(text)
    forced = host or node
    conf = request.services().conf
    db = request.services().client.statedb
    if forced:
        request.authorize('tristate:servers:create:forced_host')
        if zone is not None and db.host_zones([forced]).get(
                forced, conf.default_availability_zone) != zone:
            LOG.warning("Requested availability zone '%s' but forced host "
                        "'%s' is not in it; the zone is ignored", zone,
                        forced)
            zone = None
        return zone, forced
    if zone is not None:
        available, _ = zones(services_routes.all_services())
        # (the conductors' zone passes, as in Nova: no host is in it, so
        # the build finds none)
        if zone not in available:
            raise exception.Invalid('The requested availability zone is not '
                                    'available')
    return zone, None
