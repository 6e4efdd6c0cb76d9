"""A guest's console log on its host: reading its end, rotating, removing.

libvirt writes the serial console of a KVM/QEMU guest to a per-instance
file through virtlogd (``<log file=... append='on'/>`` in the domain XML),
which rotates it at ``max_size`` bytes keeping ``max_backups`` older files
named ``<path>.0`` (the newest) to ``<path>.<N-1>`` (see
/etc/libvirt/virtlogd.conf: 2 MiB and 3 by default). The fake driver writes
its own log the same way (:func:`append`, one backup). Whatever grows it,
what an agent sends is bounded here: the last ``max_bytes`` bytes of the
current file and, when it is shorter, of the newest backup before it.
"""

import dataclasses
import glob
import hashlib
import os

BACKUP = '%s.0'     # the newest backup, virtlogd's name for it


def tail(path, max_bytes):
    """The last ``max_bytes`` bytes of the log at ``path`` (with its newest
    backup in front when the current file is shorter), or None when the
    guest has no log there."""
    parts = []
    left = max_bytes
    for name in (path, BACKUP % path):
        chunk = _tail_of(name, left)
        if chunk is None:
            continue
        parts.append(chunk)
        left -= len(chunk)
        if left <= 0:
            break
    if not parts:
        return None
    return b''.join(reversed(parts))


def _tail_of(name, max_bytes):
    try:
        with open(name, 'rb') as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            return f.read(max_bytes)
    except FileNotFoundError:
        return None


def append(path, text, max_bytes):
    """Add ``text`` to the log, moving a file that would pass
    ``max_bytes`` to its backup first (the fake driver's virtlogd)."""
    data = text.encode('utf-8', 'backslashreplace')
    f = _open_end(path)
    try:
        size = os.fstat(f.fileno()).st_size
        if size and size + len(data) > max_bytes:
            f.close()
            os.replace(path, BACKUP % path)
            f = _open_end(path)
        view = memoryview(data)
        while view:
            view = view[f.write(view):]
    finally:
        f.close()


def _open_end(path):
    """``path`` opened to append, unbuffered (one write a line, no
    terminal check), its directory made if it is missing."""
    try:
        return open(path, 'ab', buffering=0)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, 'ab', buffering=0)


def remove(path):
    """Remove the log and every backup of it."""
    for name in [path] + glob.glob(glob.escape(path) + '.[0-9]*'):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def stale(path, cutoff):
    """Whether the log at ``path`` (or a backup of it) exists and none
    was written since ``cutoff`` (a time.time())."""
    times = []
    for name in [path] + glob.glob(glob.escape(path) + '.[0-9]*'):
        try:
            times.append(os.path.getmtime(name))
        except FileNotFoundError:
            pass
    return bool(times) and max(times) < cutoff


@dataclasses.dataclass(frozen=True)
class Settings:
    """A host's guest consoles, from ``[serial_console]``."""
    enabled: bool = False
    listen_address: str = '127.0.0.1'
    first_port: int = 10000
    last_port: int = 20000
    log_max_bytes: int = 65536      # the fake driver's rotation size

    @classmethod
    def from_conf(cls, conf):
        group = conf.serial_console
        first, last = port_range(group.port_range)
        return cls(enabled=group.enabled, listen_address=group.listen_address,
                   first_port=first, last_port=last,
                   log_max_bytes=group.fake_log_max_bytes)

    def ports(self):
        return range(self.first_port, self.last_port + 1)

    def port_for(self, uuid):
        """A port of the range derived from ``uuid`` (the fake driver's:
        nothing listens there unless a test does)."""
        digest = hashlib.sha256(uuid.encode()).digest()
        return self.first_port + int.from_bytes(digest[:4], 'big') % len(
            self.ports())


def port_range(text):
    """(first, last) of ``[serial_console] port_range``."""
    first, last = (int(part) for part in text.split(':'))
    if not 0 < first <= last < 65536:
        raise ValueError('[serial_console] port_range %r: expected '
                         'first:last with 0 < first <= last < 65536' % text)
    return first, last
