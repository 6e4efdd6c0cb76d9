"""Every option, for ``oslo-config-generator`` (the ``oslo.config.opts`` entry
point) and for the sample config, which tox regenerates and CI checks."""

from common.conf import _MODULES


def list_opts():
    """[(group, [opts])] for every module of :mod:`common.conf`."""
    merged = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return [(group, opts) for group, opts in merged.items()]
