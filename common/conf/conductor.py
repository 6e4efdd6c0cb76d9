"""Options of the ``[conductor]`` group: topics, timeouts, periodic jobs, flavors."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('conductor', title='Conductor',
                     help='The conductor: task bookkeeping, reaper, reclaim.')

opts = [
    cfg.StrOpt('topic', default='tristate-conductor',
               help='RPC topic the conductors consume (competing consumers). '
                    'Default: tristate-conductor.'),
    cfg.DictOpt('task_timeouts', default={},
                help='Per-action seconds without progress before the reaper '
                     'fails a task, e.g. build:1800,stop:300. Actions not '
                     'listed use the defaults of the action table (see '
                     'docs/states.md; 300 to 3600 s). Range >= 1 each. '
                     'Default: empty.'),
    cfg.IntOpt('periodic_interval', default=10, min=1,
               help='Seconds between two runs of the conductor\'s periodic '
                    'jobs (stuck-task reaper, soft-delete reclaim). Range '
                    '>= 1; default 10.'),
    cfg.IntOpt('service_down_time', default=60, min=1,
               help='Seconds without a heartbeat after which a compute host '
                    'is down: the scheduler skips it and new tasks for its '
                    'instances are refused. Range >= 1; default 60. Keep it '
                    'several times [compute] heartbeat_interval.'),
    cfg.IntOpt('reclaim_instance_interval', default=0, min=0,
               help='Seconds a SOFT_DELETED instance can be restored before '
                    'the conductor hard-deletes it. Range >= 0; default 0, '
                    'which means soft-deleted instances are kept until '
                    'deleted by hand.'),
    cfg.IntOpt('rpc_timeout', default=30, min=1,
               help='Seconds a conductor waits for an agent\'s answer to a '
                    'call (casts do not wait). Range >= 1; default 30.'),
    cfg.FloatOpt('task_delivery_timeout', default=5.0, min=0.1,
                 help='Seconds a conductor waits for an agent to accept a '
                      'task it sent (the agent answers once the task is in '
                      'its journal) before sending it again; it is sent '
                      'again until accepted or ended by the reaper, and runs '
                      'once. Covers messages lost when the broker restarts. '
                      'Range >= 0.1; default 5.'),
    cfg.ListOpt('flavors',
                default=['tiny:1:512:1', 'small:1:2048:20',
                         'medium:2:4096:40', 'large:4:8192:80'],
                help='Flavors inserted into the database (id = NAME) the '
                     'first time a process reads flavors, each once: a '
                     'flavor an admin deleted through DELETE /flavors is '
                     'not inserted again, and one changed here is not '
                     'changed there (manage them with the flavors API). '
                     'Each NAME:VCPUS:MEMORY_MB:DISK_GB. Default: tiny '
                     '1/512/1, small 1/2048/20, medium 2/4096/40, large '
                     '4/8192/80.'),
    cfg.StrOpt('default_user_shutdown', default='stop',
               choices=['stop', 'restart', 'delete'],
               help='user_shutdown policy of new instances that do not set '
                    'one: stop (follow the guest: STOPPED), restart, or '
                    'delete (hard-delete the instance, as a cloud with '
                    'shutdown_terminate does). Default: stop.'),
    cfg.StrOpt('default_crash', default='restart',
               choices=['restart', 'stop', 'error'],
               help='crash policy of new instances that do not set one. '
                    'Default: restart.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
