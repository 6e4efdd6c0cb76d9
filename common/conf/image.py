"""Options of the ``[image]`` group: the image service and the per-host cache.

Who reads what:

* the API tier: ``api_endpoint`` (an existing Glance: serve no images of
  our own), ``max_image_size``, ``upload_idle_timeout``, ``grant_ttl`` (it
  checks the grants agents present);
* the conductor: ``service_url`` and ``api_endpoint`` (what it tells agents
  to fetch from), ``grant_ttl`` (how long a grant it issues lasts);
* agents: ``cache_path``, ``cache_max_age``, ``cache_check_interval``,
  ``chunk_size``, ``upload_idle_timeout`` (how long a transfer may stall),
  and the Keystone options of this group when ``api_endpoint`` is a Glance
  behind Keystone.

The Keystone options are keystoneauth's (``auth_type``, ``auth_url``,
``username``, ... and the session's ``cafile``, ``insecure``, ...),
registered on this group when keystoneauth1 is installed (the keystone
extra). Without ``auth_type`` agents send no Keystone token: they use the
grant the conductor gives them with each task.

Where image data is stored is ``[glance_store]`` (glance_store's own
options; the embedded default is the ``file`` store under ``$state_dir``).
"""

from oslo_config import cfg

from common.conf import _group

group = cfg.OptGroup('image', title='Images',
                     help='The image service (Glance v2, served by the API '
                          'tier or an existing Glance) and the cache of '
                          'images on each hypervisor host.')

opts = [
    cfg.URIOpt('api_endpoint', default=None, schemes=['http', 'https'],
               help='Base URL of an existing Glance (e.g. '
                    'http://glance.example:9292). When set, the API tier '
                    'serves no images of its own, creates are checked '
                    'against this Glance, and agents fetch from and upload '
                    'snapshots to it with the Glance v2 API. Default '
                    '(unset): Tristate\'s own image service.'),
    cfg.URIOpt('service_url', default=None, schemes=['http', 'https'],
               help='Where agents reach Tristate\'s own image service: the '
                    'API tier\'s /image endpoint as seen from hypervisor '
                    'hosts (e.g. http://controller:8774/image). Read by the '
                    'conductor, which passes it to agents with each task '
                    'that needs an image. tristate-all sets it to its own '
                    'API. Ignored when api_endpoint is set. Default (unset): '
                    'agents are given no image service, and a driver that '
                    'builds from image files fails such tasks saying so.'),
    cfg.IntOpt('grant_ttl', default=3600, min=60,
               help='Seconds a grant lasts: the capability a conductor '
                    'gives an agent with a task to read one image (a build, '
                    'rebuild or rescue) or to upload one (a snapshot or '
                    'backup). Checked when a transfer starts; a transfer '
                    'under way is not cut. Default: 3600.'),
    cfg.IntOpt('max_image_size', default=1024 ** 4, min=1,
               help='Largest image, in bytes, the image service accepts; '
                    'an upload that goes past it is refused with 413 and '
                    'the image is left queued. Default: 1 TiB.'),
    cfg.IntOpt('upload_idle_timeout', default=60, min=1,
               help='Seconds an image upload or download may go without '
                    'moving a byte before the connection is closed (an '
                    'upload so cut leaves the image queued, never active). '
                    'Default: 60.'),
    cfg.IntOpt('chunk_size', default=1024 * 1024, min=4096,
               help='Bytes read or written at a time when images are '
                    'streamed (uploads, downloads, the cache). Default: '
                    '1 MiB.'),
    cfg.StrOpt('cache_path', default='$state_dir/image-cache',
               help='Directory of an agent\'s image cache: images fetched '
                    'by id, verified against their sha512, shared by the '
                    'disks built from them (qcow2 overlays). Counted in '
                    'the disk the host reports as used. Default: '
                    '$state_dir/image-cache.'),
    cfg.IntOpt('cache_max_age', default=86400, min=0,
               help='Seconds a cached image may go unused by any disk '
                    'before the cache removes it (never while a disk on '
                    'this host uses it). 0: never remove. Default: 86400.'),
    cfg.IntOpt('cache_check_interval', default=600, min=1,
               help='Seconds between two passes of the cache manager, '
                    'which removes images unused for cache_max_age. '
                    'Default: 600.'),
]


def keystone_opts():
    """keystoneauth's session, auth-type and password-plugin options, or
    none without keystoneauth1 (the keystone extra)."""
    try:
        from keystoneauth1 import loading
    except ImportError:
        return []
    return (loading.get_session_conf_options()
            + loading.get_auth_common_conf_options()
            + loading.get_auth_plugin_conf_options('password'))


def register_opts(conf):
    _group.register(conf, group, opts)
    try:
        from keystoneauth1 import loading
    except ImportError:
        return
    # The plugin's own options (auth_url, username, ...) are registered
    # by keystoneauth when the session is loaded (auth_type decides them).
    loading.register_session_conf_options(conf, group.name)
    loading.register_auth_conf_options(conf, group.name)


def list_opts():
    return {group: opts + keystone_opts()}
