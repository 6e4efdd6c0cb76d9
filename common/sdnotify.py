"""systemd's readiness protocol (``Type=notify``), in the standard library.

systemd passes a datagram socket in ``NOTIFY_SOCKET`` (a path, or an
abstract name starting with ``@``); a daemon sends ``READY=1`` once it
serves, ``STOPPING=1`` when it begins to stop and ``STATUS=...`` for
``systemctl status``. Without ``NOTIFY_SOCKET`` (not under systemd) every
call does nothing, so daemons call these unconditionally::

    from common import sdnotify
    service.start()
    sdnotify.ready('serving on %s' % url)
    ...
    sdnotify.stopping()

Imports nothing beyond the standard library: the compute agents use it too.
"""

import logging
import os
import socket

LOG = logging.getLogger(__name__)
ENV = 'NOTIFY_SOCKET'


def notify(*assignments):
    """Send ``KEY=VALUE`` lines; True if systemd was told, False if there
    is no NOTIFY_SOCKET or sending failed (never raises)."""
    address = os.environ.get(ENV)
    if not address:
        return False
    if address.startswith('@'):
        address = '\0' + address[1:]          # Linux abstract namespace
    message = '\n'.join(assignments).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message)
    except OSError as err:
        LOG.warning('Could not notify systemd at %s: %s', address, err)
        return False
    return True


def ready(status=None):
    """The service is up: systemd's start job completes."""
    lines = ['READY=1', 'MAINPID=%d' % os.getpid()]
    if status:
        lines.append('STATUS=%s' % status)
    return notify(*lines)


def stopping(status=None):
    lines = ['STOPPING=1']
    if status:
        lines.append('STATUS=%s' % status)
    return notify(*lines)


def status(text):
    return notify('STATUS=%s' % text)
