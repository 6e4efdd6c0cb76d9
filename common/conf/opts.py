"""Every option, for ``oslo-config-generator`` (the ``oslo.config.opts`` entry
point) and for the sample config, which tox regenerates and CI checks."""

from common.conf import _MODULES

# The ``oslo.config.opts`` namespaces of every option a Tristate daemon
# reads: etc/tristate/tristate-config-generator.conf and
# tristate-config-validator.conf list the same (a test checks), and a
# daemon warns at start about any option of its files outside them.
NAMESPACES = ('tristate', 'oslo.log', 'oslo.messaging', 'oslo.policy',
              'oslo.middleware.healthcheck',
              'oslo.middleware.http_proxy_to_wsgi',
              'keystonemiddleware.auth_token', 'tristate.keystone_authtoken',
              'tristate.glance_store')


def list_opts():
    """[(group, [opts])] for every module of :mod:`common.conf`. Sets
    Tristate's defaults of oslo.log (the log format) and oslo.messaging
    (the exchange) first, as every daemon does, so that the sample (whose
    other namespaces are read after this one) shows the defaults the
    daemons run with."""
    from common import context
    from common import rpc
    context.set_log_defaults()
    rpc.set_defaults()
    merged = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return [(group, opts) for group, opts in merged.items()]


def list_keystone_auth_opts():
    """keystoneauth's ``password`` plugin options, which keystonemiddleware
    reads from ``[keystone_authtoken]`` (auth_url, username, password, ...)
    but does not list (they depend on ``auth_type``); none without the
    keystone extra. The ``tristate.keystone_authtoken`` namespace: theirs,
    not Tristate's (their help follows keystoneauth's conventions)."""
    try:
        from keystoneauth1 import loading
    except ImportError:
        return []
    return [('keystone_authtoken',
             loading.get_auth_plugin_conf_options('password'))]
