"""The version of the installed package, which services report in their
heartbeats (``tristate-manage status``)."""

from importlib import metadata


def package_version():
    try:
        return metadata.version('tristate')
    except metadata.PackageNotFoundError:   # run from a tree, not installed
        return 'unknown'
