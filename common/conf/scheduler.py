"""Options of the ``[scheduler]`` group: filters, weigher, allocation ratios."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('scheduler', title='Scheduler',
                     help='Host selection in the conductor (DESIGN.md section 6).')

opts = [
    cfg.StrOpt('weigher', default='spread', choices=['spread', 'pack'],
               help='spread: prefer the host with the most free RAM; pack: '
                    'the least. Default: spread.'),
    cfg.FloatOpt('cpu_allocation_ratio', default=4.0, min=0.0,
                 help='Virtual CPUs allocatable per physical CPU. Range >= 0; '
                      'default 4.0; 0 makes every host full.'),
    cfg.FloatOpt('ram_allocation_ratio', default=1.0, min=0.0,
                 help='Memory allocatable per MiB of host memory. Range >= 0; '
                      'default 1.0.'),
    cfg.FloatOpt('disk_allocation_ratio', default=1.0, min=0.0,
                 help='Disk allocatable per GiB of host disk. Range >= 0; '
                      'default 1.0.'),
    cfg.BoolOpt('enable_new_hosts', default=True,
                help='Whether a host whose agent sends its first heartbeat '
                     'is enabled at once (takes builds). False: it is '
                     'registered disabled, and takes nothing until an admin '
                     'enables it (tristate-manage host enable NAME), as '
                     'Nova\'s enable_new_services. Default: true.'),
    cfg.IntOpt('max_attempts', default=10, min=1,
               help='Hosts tried, best first, when the chosen host filled up '
                    'meanwhile (another conductor allocated first). Range '
                    '>= 1; default 10.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
