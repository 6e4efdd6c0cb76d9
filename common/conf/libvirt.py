"""Options of the ``[libvirt]`` group: the libvirt virt driver (KVM/QEMU, Xen).

Read by :meth:`compute_agent.virt.libvirt.LibvirtDriver.from_conf` only, with
``[compute] shutdown_timeout`` for clean shutdowns. The ``live_migration_*``
options are read by :mod:`compute_agent.virt.libvirt.migration`: the
destination's say where the source sends the guest, the source's how long
it may take and whether post-copy may finish it. Nothing here imports the
libvirt library.
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('libvirt', title='Libvirt driver',
                     help='The libvirt virt driver ([compute] driver = '
                          'libvirt): which hypervisor, where images and '
                          'instance disks live, how events are debounced and '
                          'how a lost connection is re-opened.')

opts = [
    cfg.StrOpt('connection_uri', default='qemu:///system',
               help='Libvirt connection URI: qemu:///system (KVM/QEMU), '
                    'xen:///system (Xen through libxl), or test:///... '
                    '(libvirt\'s in-process test driver, for demos and '
                    'tests). test:///default is shared by every connection '
                    'of a process, so with test_node_per_host each host '
                    'gets its own node file instead. Default: '
                    'qemu:///system.'),
    cfg.StrOpt('virt_type', default='kvm', choices=['kvm', 'qemu', 'xen'],
               help='Domain XML flavour: kvm (hardware acceleration), qemu '
                    '(TCG emulation, no /dev/kvm needed) or xen (HVM through '
                    'libxl; on_poweroff and on_crash are "preserve", so a '
                    'guest that stopped stays visible until it has been '
                    'reported). Must match connection_uri. Default: kvm.'),
    cfg.StrOpt('cpu_mode', default='host-model',
               choices=['host-model', 'host-passthrough', 'none'],
               help='Guest CPU of the kvm flavour: host-model (a model like '
                    'the host\'s, migratable), host-passthrough (the host\'s '
                    'CPU as it is), or none (the hypervisor\'s default '
                    'model; nested KVM hosts may refuse the other two). '
                    'Ignored for qemu (TCG) and xen. Default: host-model.'),
    cfg.StrOpt('instances_path', default='$state_dir/instances',
               help='Directory of instance files: one sub-directory per '
                    'instance uuid (its disk, and the definitions kept for '
                    'unrescue and resize revert). Its file system\'s size is '
                    'the disk capacity reported. Default: '
                    '$state_dir/instances.'),
    cfg.FloatOpt('rescue_password_timeout', default=120.0, min=0.0,
                 help='Seconds a rescue given an admin password ("adminPass") '
                      'waits for the rescue system\'s qemu-guest-agent to '
                      'take it (setUserPassword for root, tried every '
                      'second). No agent answers in time: the rescue is '
                      'undone and fails, and the API answers Nova\'s 409 '
                      '"Failed to set admin password". A generated password '
                      'is not waited for. Range >= 0; default 120.'),
    cfg.FloatOpt('event_debounce', default=None, min=0.0, max=60.0,
                 help='Seconds a domain\'s lifecycle events are gathered '
                      'before its state is read again and reported. On Xen '
                      'it absorbs the stop/start pair that libxl reports '
                      'for a reboot made inside the guest; QEMU reports '
                      'such a reboot as a REBOOT event, never a stop, so '
                      'there it only merges a burst of events (and a '
                      'guest\'s own power-off, QEMU\'s SHUTDOWN event with '
                      'detail guest, is reported at once). Range 0-60; '
                      'default (unset): 0.5 with virt_type xen, 0.05 with '
                      'kvm and qemu; 0 reports every event at once.'),
    cfg.FloatOpt('reconnect_interval_min', default=0.5, min=0.01,
                 help='Seconds before the first retry of a lost libvirt '
                      'connection; each further wait doubles up to '
                      'reconnect_interval_max. Range >= 0.01; default 0.5; '
                      '0 is not allowed.'),
    cfg.FloatOpt('reconnect_interval_max', default=30.0, min=0.01,
                 help='Upper bound in seconds of the wait between two '
                      'retries of a lost libvirt connection. Range >= 0.01; '
                      'default 30.'),
    cfg.FloatOpt('reconnect_timeout', default=60.0, min=0.0,
                 help='Seconds an operation waits for a lost libvirt '
                      'connection to come back before it fails (the event '
                      'watcher keeps retrying in the background). Range '
                      '>= 0; default 60; 0 means one attempt only.'),
    cfg.BoolOpt('test_node_per_host', default=True,
                help='With connection_uri test:///default, write an empty '
                     'node file per host under instances_path and connect '
                     'to it, so that several agents in one process do not '
                     'share domains. The test driver never writes a node '
                     'file back: a re-opened connection starts from the '
                     'file again. Default: true.'),
    cfg.StrOpt('live_migration_scheme', default='tcp',
               choices=['tcp', 'tls', 'ssh'],
               help='Transport of the libvirt-to-libvirt connection of a '
                    'live migration into this host: the source\'s libvirtd '
                    'connects to qemu+SCHEME://INBOUND_ADDR/system (tcp: '
                    'libvirtd\'s TCP socket, port 16509, with SASL or on a '
                    'trusted network only; tls: port 16514 with '
                    'certificates; ssh: as root over SSH, keys between the '
                    'hosts). Ignored when live_migration_uri is set. '
                    'Default: tcp.'),
    cfg.StrOpt('live_migration_inbound_addr', default=None,
               help='Address other hosts reach this host at for live '
                    'migrations into it: the libvirt connection '
                    '(live_migration_scheme) and the migration\'s data '
                    '(QEMU\'s memory stream and the NBD disk copy, on '
                    'tcp://ADDR, ports 49152-49215 of qemu.conf '
                    'migration_port_min/max). Default (unset): this '
                    'machine\'s host name, and libvirt\'s choice of data '
                    'address.'),
    cfg.StrOpt('live_migration_uri', default=None,
               help='The libvirt URI a source host\'s libvirtd connects to '
                    'for a live migration into this host, instead of '
                    'qemu+SCHEME://INBOUND_ADDR/system; %s in it is '
                    'replaced by live_migration_inbound_addr (e.g. '
                    'qemu+ssh://migrator@%s/system). Default (unset): made '
                    'from live_migration_scheme.'),
    cfg.IntOpt('live_migration_timeout', default=600, min=0,
               help='Seconds a live migration out of this host may run: '
                    'then it is aborted (abortJob) and the guest keeps '
                    'running here, ACTIVE, the task failed; or, with '
                    'live_migration_permit_post_copy, switched to post-copy '
                    'so that it completes. Unlike Nova\'s '
                    'live_migration_completion_timeout it is not scaled by '
                    'the guest\'s size. Range >= 0; default 600; 0: no '
                    'limit.'),
    cfg.BoolOpt('live_migration_permit_post_copy', default=False,
                help='Let a live migration that reaches '
                     'live_migration_timeout finish in post-copy mode (the '
                     'guest runs on the destination at once and fetches '
                     'its memory pages from the source on demand) instead '
                     'of being aborted. In post-copy a network or host '
                     'failure loses the guest: neither copy is complete. '
                     'Default: false.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
