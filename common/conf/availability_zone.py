"""Availability zones (``[DEFAULT]``, Nova's names): the zone of a host no
aggregate puts in one, and the zone the control services are shown in.
A host's zone is otherwise the ``availability_zone`` metadata of its
aggregate (common/db/aggregates.py)."""

from oslo_config import cfg

opts = [
    cfg.StrOpt('default_availability_zone', default='nova',
               help='Availability zone of every compute host that no host '
                    'aggregate with availability_zone metadata holds: shown '
                    'by os-availability-zone, on servers '
                    '(OS-EXT-AZ:availability_zone) and asked for by '
                    'POST /servers availability_zone. Default: nova (as '
                    'Nova). Change it only while no aggregate names it.'),
    cfg.StrOpt('internal_service_availability_zone', default='internal',
               help='Availability zone the conductors are shown in '
                    '(os-services, os-availability-zone/detail); never a '
                    'zone servers can be built in. Default: internal (as '
                    'Nova).'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
