"""Options of the ``[fake_driver]`` group: the fake hypervisor's host.

Read by :meth:`compute_agent.virt.fake.FakeDriver.from_conf` only. The fake
keeps its domains under ``[DEFAULT] state_dir``/fakevirt/<host>/, one file per
domain (:mod:`compute_agent.virt.fake_store`).
"""

from oslo_config import cfg
from oslo_config import types

# Kept equal to compute_agent.virt.fake.FAULT_MODES (a unit test checks it):
# common/ must not import the compute agent.
FAULT_MODES = ('fail', 'fail_no_rollback', 'hang')

_OPERATIONS = ('spawn, destroy, power_off, power_on, reboot, pause, unpause, '
               'suspend, resume, rescue, unrescue, rebuild, resize, '
               'confirm_resize, revert_resize, migrate_out, snapshot, '
               'export_disk, migrate_in, write_disk, set_password, '
               'set_security_groups')

group = cfg.OptGroup('fake_driver', title='Fake hypervisor',
                     help='The file-backed fake hypervisor (compute_driver '
                          'fake): what the host offers and how its '
                          'operations misbehave, for the embedded setup and '
                          'the tests.')

opts = [
    cfg.IntOpt('vcpus', default=16, min=0,
               help='Virtual CPUs the fake host reports. Range >= 0; '
                    'default 16; 0 means a host that can take nothing.'),
    cfg.IntOpt('memory_mb', default=65536, min=0,
               help='Memory in MiB the fake host reports. Range >= 0; '
                    'default 65536; 0 means a host that can take nothing.'),
    cfg.IntOpt('disk_gb', default=1000, min=0,
               help='Disk in GiB the fake host reports. Range >= 0; default '
                    '1000; 0 means a host that can take nothing.'),
    cfg.Opt('latency', type=types.Dict(value_type=types.Float(min=0.0)),
            default={},
            help='Seconds each operation takes, as operation:seconds pairs, '
                 'e.g. spawn:2.5,power_off:0.5. Operations: %s. Range of '
                 'each value >= 0; default: empty (every operation returns '
                 'at once); 0 means no delay.' % _OPERATIONS),
    cfg.Opt('faults', type=types.Dict(value_type=types.String(
                choices=FAULT_MODES)),
            default={},
            help='Operations that fail, as operation:mode pairs, e.g. '
                 'spawn:fail,resize:hang. Modes: fail (raises, domain '
                 'unchanged), fail_no_rollback (raises, domain left CRASHED), '
                 'hang (blocks until the fault is cleared with '
                 'tristate-fakevirt clear-faults, the agent stops, or '
                 'hang_timeout passes, then raises). Written to the host\'s '
                 'store when the agent starts, so tristate-fakevirt can clear '
                 'them. Default: empty (nothing fails).'),
    cfg.FloatOpt('poll_interval', default=0.1, min=0.01, max=5.0,
                 help='Seconds between two checks of the host\'s store '
                      'for changes made from outside (tristate-fakevirt, '
                      'another process) and for cleared faults. Range '
                      '0.01-5; default 0.1; 0 is not allowed.'),
    cfg.FloatOpt('hang_timeout', default=3600.0, min=0.0,
                 help='Seconds an operation with a hang fault blocks before '
                      'it gives up and raises. Range >= 0; default 3600; 0 '
                      'means raise at once without blocking.'),
]


def register_opts(conf):
    # A fresh OptGroup per ConfigOpts: register_group() copies it shallowly,
    # so a shared one would leak set_override() values between ConfigOpts.
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                     help=group.help))
    conf.register_opts(opts, group=group.name)


def list_opts():
    return {group: opts}
