"""Options of the ``[compute]`` group: the compute agent on a hypervisor host."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('compute', title='Compute agent',
                     help='The compute agent. It never reads [database].')

opts = [
    cfg.StrOpt('topic', default='tristate-compute',
               help='RPC topic of the agents; each listens with '
                    'server=[DEFAULT] host. Default: tristate-compute.'),
    cfg.StrOpt('driver', default='fake', choices=['fake', 'libvirt'],
               help='Virt driver: fake (a file-backed fake hypervisor under '
                    '[DEFAULT] state_dir, for demos and tests) or libvirt. '
                    'Default: fake.'),
    cfg.FloatOpt('heartbeat_interval', default=10.0, min=0.1,
                 help='Seconds between two heartbeats (with capacity) to the '
                      'conductor. Range >= 0.1; default 10.'),
    cfg.FloatOpt('power_sync_interval', default=60.0, min=0.1,
                 help='Seconds between two full power reports of every '
                      'domain, the safety net under event-driven reports. '
                      'The report travels in a heartbeat, sent early when '
                      'it is due (conductor RPC 1.4). '
                      'Range >= 0.1; default 60.'),
    cfg.FloatOpt('leftover_sweep_interval', default=600.0, min=0,
                 help='Seconds between two sweeps of the config drives and '
                      'console logs of instances this host does not own '
                      '(no domain here, no task running, untouched for 5 '
                      'minutes), the first at the agent\'s start. 0 turns '
                      'the sweep off. Range >= 0; default 600.'),
    cfg.IntOpt('reserved_host_memory_mb', default=0, min=0,
               help='MiB of the host\'s memory kept for the host itself: '
                    'reported with the heartbeat and never given to '
                    'instances (the scheduler allocates (total - reserved) '
                    'x ram ratio). Range >= 0; default 0 (Nova: 512), '
                    'which keeps nothing back.'),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0,
               help='Physical CPUs kept for the host itself, the same way '
                    '(Nova\'s reserved_host_cpus). Range >= 0; default 0, '
                    'which keeps nothing back.'),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0,
               help='MiB of the instances\' disk kept for the host itself, '
                    'the same way; counted in whole GiB, rounded up, as '
                    'Nova does. Range >= 0; default 0, which keeps nothing '
                    'back.'),
    cfg.FloatOpt('cpu_allocation_ratio', min=0.0,
                 help='This host\'s virtual CPUs allocatable per physical '
                      'CPU, reported with the heartbeat; overrides the '
                      'conductors\' [scheduler] cpu_allocation_ratio on '
                      'this host. Range >= 0; default unset (the '
                      'scheduler\'s); 0 makes the host full.'),
    cfg.FloatOpt('ram_allocation_ratio', min=0.0,
                 help='This host\'s memory allocatable per MiB, the same '
                      'way ([scheduler] ram_allocation_ratio). Range >= 0; '
                      'default unset (the scheduler\'s).'),
    cfg.FloatOpt('disk_allocation_ratio', min=0.0,
                 help='This host\'s disk allocatable per GiB, the same way '
                      '([scheduler] disk_allocation_ratio). Range >= 0; '
                      'default unset (the scheduler\'s).'),
    cfg.BoolOpt('force_config_drive', default=False,
                help='Give every new server a config drive (ConfigDrive-2 '
                     'ISO with its key, user data and metadata), as if it '
                     'asked for one. Read by the conductors when a server '
                     'is created (the server then shows config_drive '
                     '"True"). Default: false (a drive only when the '
                     'create asks for one).'),
    cfg.IntOpt('shelved_offload_time', default=0, min=-1,
               help='Seconds a shelved server keeps its place on its host '
                    'before it is offloaded (its domain and disk removed, '
                    'its host\'s resources freed; Nova\'s option). Read by '
                    'the conductors: 0 offloads at once after the shelve; '
                    'N > 0 by their periodic sweep ([conductor] '
                    'periodic_interval) once the server was shelved N '
                    'seconds ago; -1 never (only shelveOffload does). '
                    'Range >= -1; default 0.'),
    cfg.IntOpt('shutdown_timeout', default=60, min=0,
               help='Seconds a clean (ACPI) shutdown may take before the '
                    'domain is destroyed. Range >= 0; default 60; 0 destroys '
                    'at once.'),
    cfg.IntOpt('max_concurrent_tasks', default=64, min=1,
               help='Tasks the agent runs at once; the others are accepted '
                    'and wait their turn (a task waiting longer '
                    'than its timeout is failed by the reaper). Range >= 1; '
                    'default 64.'),
    cfg.FloatOpt('report_retry_max', default=30.0, min=0.1,
                 help='Upper bound in seconds of the wait between two tries '
                      'of a task result or power report the conductor did '
                      'not acknowledge; results are retried until recorded. '
                      'Range >= 0.1; default 30.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
