"""Tests of the libvirt driver against libvirt's own test driver (test:///).

No daemon: the test driver runs inside the client library. Each test writes
its node XML under ``tmp_path``; every open() of a node file gets its own
copy of its domains, so tests never share domains.
"""

import os

import pytest

INSTALL_HINT = ('apt-get install -y libvirt-dev pkg-config, then pip install '
                'libvirt-python')


def require_libvirt():
    """The libvirt module; without it skip the calling test module, or, in
    CI (CI=true), fail: CI must run these tests."""
    try:
        import libvirt
    except ImportError as err:
        reason = 'libvirt-python cannot be imported (%s): %s' % (
            err, INSTALL_HINT)
        if os.environ.get('CI') == 'true':
            pytest.fail('CI needs libvirt-python: ' + reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return libvirt
