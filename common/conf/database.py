"""Options of the ``[database]`` group: where the state lives, how to retry."""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('database', title='Database',
                     help='The database the conductor and the API tier share. '
                          'Compute agents never read these options.')

opts = [
    cfg.StrOpt('connection', secret=True,
               help='SQLAlchemy URL of the database, e.g. '
                    'postgresql+psycopg2://tristate:PASS@db/tristate. Default: '
                    'unset, which means a SQLite file tristate.sqlite under '
                    '[DEFAULT] state_dir (the embedded setup).'),
    cfg.StrOpt('sqlite_synchronous', default='NORMAL',
               choices=['OFF', 'NORMAL', 'FULL'],
               help='PRAGMA synchronous for SQLite in WAL mode. NORMAL may '
                    'lose the last transactions on power loss (never corrupts); '
                    'FULL survives it at ~6x the cost per write. Default: '
                    'NORMAL. Ignored for other databases.'),
    cfg.FloatOpt('sqlite_busy_timeout', default=5.0, min=0.0,
                 help='Seconds a SQLite writer waits for the lock held by '
                      'another writer before the attempt counts as failed '
                      'and is retried. Range >= 0; default 5.0; 0 means do '
                      'not wait.'),
    cfg.IntOpt('max_retries', default=5, min=1, max=100,
               help='Attempts of one database transaction that fails with a '
                    'transient error (deadlock, serialization failure, lost '
                    'connection, SQLite busy) before the request fails with a '
                    'clear "database unavailable" error. Range 1-100; default '
                    '5; 1 means no retry.'),
    cfg.FloatOpt('retry_interval', default=0.05, min=0.0,
                 help='Seconds before the first retry of a transient database '
                      'error; doubles for every further retry. Range >= 0; '
                      'default 0.05; 0 retries at once.'),
    cfg.FloatOpt('max_retry_interval', default=1.0, min=0.0,
                 help='Upper bound in seconds of the wait between two retries '
                      'of a transient database error. Range >= 0; default '
                      '1.0.'),
    cfg.IntOpt('pool_size', default=10, min=1,
               help='Connections kept open to a server database (PostgreSQL, '
                    'MySQL) per process. Range >= 1; default 10. Not used for '
                    'SQLite.'),
    cfg.IntOpt('max_overflow', default=20, min=0,
               help='Connections opened beyond pool_size under load, closed '
                    'when returned. Range >= 0; default 20; 0 means never more '
                    'than pool_size.'),
    cfg.IntOpt('pool_timeout', default=10, min=1,
               help='Seconds a request waits for a free pooled connection '
                    'before failing. Range >= 1; default 10.'),
]


def register_opts(conf):
    _group.register(conf, group, opts)


def list_opts():
    return {group: opts}
