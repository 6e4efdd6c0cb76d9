"""Options of the ``[leases]`` group: when the conductors run lease events
(the statuses and rules themselves are data: common/leases.py)."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('leases', title='Leases',
                     help='Advance host reservations (DESIGN.md section 7).')

opts = [
    cfg.IntOpt('periodic_interval', default=10, min=1,
               help='Seconds between two runs of the conductor\'s lease job, '
                    'which runs the lease events that are due (start, '
                    'before end, end). A lease starts and ends up to this '
                    'late. Range >= 1; default 10.'),
    cfg.IntOpt('before_end', default=60, min=0,
               help='Minutes before a lease\'s end at which its '
                    'before_end_lease event sends the lease.before_end '
                    'notification, when the lease does not set '
                    'before_end_date itself. Range >= 0; default 60; 0 '
                    'means no before_end_lease event.'),
    cfg.IntOpt('event_retries', default=3, min=0,
               help='Times a lease event whose run failed, or whose '
                    'conductor stopped, is run again before the event and '
                    'its lease go to ERROR. Range >= 0; default 3; 0 means '
                    'the first failure is final.'),
    cfg.IntOpt('event_timeout', default=600, min=1,
               help='Seconds a lease event may stay claimed by one '
                    'conductor before another one takes it over (the first '
                    'one is taken to have stopped). Range >= 1; default '
                    '600.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
