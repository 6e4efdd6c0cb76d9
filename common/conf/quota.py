"""Options of the ``[quota]`` group: per-project default limits.

An admin overrides them per project with ``PUT /os-quota-sets/{project}``
(stored in the database); these are the limits of every project without an
override. The check is made in the database (:mod:`common.db.quotas`).
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('quota', title='Quotas',
                     help='Per-project limits (see docs/operator-guide.md, '
                          '"Quotas and usage").')

_UNLIMITED = (' -1 means unlimited (the default: an upgrade limits nothing '
              'until the operator says so), 0 that the project may have '
              'none.')


def _limit(name, text):
    """A per-project limit: an integer of at least -1, unlimited (-1) by
    default; its help is ``text`` and what -1 and 0 mean."""
    return cfg.IntOpt(name, default=-1, min=-1, help=text + _UNLIMITED)


opts = [
    _limit('instances',
           'Instances a project may have (every vm_state but '
           'HARD_DELETED; PENDING and ERROR per count_pending). '
           'Range >= -1; default -1 (Nova: 10).'),
    _limit('cores',
           'vCPUs a project\'s instances may have in total. Range '
           '>= -1; default -1 (Nova: 20).'),
    _limit('ram',
           'MiB of RAM a project\'s instances may have in total. '
           'Range >= -1; default -1 (Nova: 51200).'),
    _limit('disk',
           'GiB of local disk a project\'s instances may have in '
           'total. Range >= -1; default -1.'),
    _limit('lease_hosts',
           'Hosts a project\'s leases that have not ended may hold '
           'at once (a lease takes at most what is left, at least '
           'its min). Range >= -1; default -1.'),
    _limit('lease_hours',
           'Hours one lease of a project may last, from its start '
           'to its end (Blazar\'s max_lease_duration). Range >= '
           '-1; default -1.'),
    cfg.IntOpt('metadata_items', default=128, min=-1,
               help='User metadata items (key/value pairs) one server may '
                    'have; more is refused with Nova\'s 403. Range >= -1; '
                    'default 128 (Nova\'s); -1 means unlimited, 0 that a '
                    'server may have none. A project\'s quota set or the '
                    'default quota class (metadata_items) overrides it.'),
    cfg.IntOpt('key_pairs', default=100, min=-1,
               help='Key pairs (os-keypairs) one user may have, unless the '
                    'project\'s quota set or the "default" quota class sets '
                    'key_pairs; more is refused with Nova\'s 403. Range >= '
                    '-1; default 100 (Nova\'s); -1 means unlimited, 0 that '
                    'a user may have none.'),
    cfg.BoolOpt('count_pending', default=True,
                help='Whether an idle PENDING or ERROR instance (a build '
                     'that found no host or failed) keeps counting against '
                     'its project\'s quota until deleted. Default: true. '
                     'False frees its quota when it is buried or fails; a '
                     'rebuild of a PENDING instance then takes it again '
                     '(checked), a reset_state to ACTIVE takes it again '
                     'unchecked.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
