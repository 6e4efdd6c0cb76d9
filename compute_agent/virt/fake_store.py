"""The fake hypervisor's files: one host's domains, shared between processes.

Owns the on-disk layout of a fake host, its locking, its atomic writes and
the journal the watcher reads. What a domain record means (power effects,
faults) belongs to :mod:`compute_agent.virt.fake`. Layout::

    <state_dir>/fakevirt/<host>/host.json
        {"host": "h1", "seq": 42, "faults": {operation: fault},
         "gen": 17, "floor": 0, "journal": [[gen, uuid], ...]}
    <state_dir>/fakevirt/<host>/domains/<uuid>.json   one domain's record
    <state_dir>/fakevirt/<host>/lock                  writers flock it

Why one file per domain (issue 8): the store used to be one JSON file per
host, so every change read, copied and rewrote every domain of the host and
every query parsed them all; a build cost O(domains on the host) and a burst
of 1,000 builds was slower per server than one of 200. Now a change of a
domain reads and writes that domain's file and ``host.json`` (bounded in
size), a query of one domain reads one file; only whole-host reads
(``list_domains``, the CLI's ``list``) cost O(domains), as they must.

Why a journal rather than comparing the files' inode, mtime and size: a
replaced file may get the inode just freed and the same mtime within the
clock's granularity, so such a cache can miss a change. Every write that
changes domains instead bumps ``gen`` and appends ``[gen, uuid]`` per
changed domain to ``journal``, which keeps the last :data:`JOURNAL_LENGTH`
entries (``floor`` is the gen of the last one dropped). A watcher that has
seen gen G reads ``host.json`` alone while nothing changes, the journaled
domains when something did, and every file only when it fell behind
(G < ``floor``). Nothing is cached across calls: every read goes to the
files, so a change made by another process is always seen.

Atomic writes: writers hold the lock and write every new file to a
temporary file before replacing any (``os.replace``), domain files first and
``host.json`` last. A failure while writing leaves every file as it was; a
reader (no lock) sees every file whole; a watcher that sees gen G finds
every change up to G in the domain files. A crash between two replaces
leaves every file whole, each domain old or new; at worst a change that was
not journaled (the agent's periodic full report still sees it) or, for a
write spanning two hosts (a migration), one side done and not the other.

Old stores: a single ``<state_dir>/fakevirt/<host>.json`` is migrated into
this layout the first time the host is opened, then removed; if the host's
new directory already has a ``host.json`` the old file is refused with an
error naming it (which of the two is the truth cannot be told).
"""

import contextlib
import copy
import fcntl
import json
import logging
import os

from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)

STORE_SUBDIR = 'fakevirt'
HOST_FILE = 'host.json'
DOMAINS_SUBDIR = 'domains'
# Entries kept in host.json's journal. Every poll of the watcher and every
# operation parses host.json, so this bounds their cost; a watcher falls
# behind (and rescans every file) only after more changes than this between
# two of its polls (0.1 s by default), far above what one host sees.
JOURNAL_LENGTH = 64


def store_dir(state_dir):
    """The directory holding every fake host's files."""
    return os.path.join(state_dir, STORE_SUBDIR)


def list_hosts(state_dir):
    """Names of the fake hosts that have a store under ``state_dir``
    (an old single-file store counts: it is migrated when opened)."""
    try:
        entries = list(os.scandir(store_dir(state_dir)))
    except FileNotFoundError:
        return []
    hosts = set()
    for entry in entries:
        if entry.name.startswith('.'):
            continue
        if entry.is_dir():
            hosts.add(entry.name)
        elif entry.name.endswith('.json'):
            hosts.add(entry.name[:-5])
    return sorted(hosts)


def _check_name(kind, name):
    if not name or os.sep in name or name.startswith('.'):
        raise ValueError('invalid fake %s name %r: expected a non-empty name '
                         'without %r that does not start with "."'
                         % (kind, name, os.sep))


def _empty_meta(host):
    return {'host': host, 'seq': 0, 'faults': {}, 'gen': 0, 'floor': 0,
            'journal': []}


def _load(path):
    """The JSON in ``path``, or None if there is no such file."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise VirtError('fake host store file %s is not valid JSON: %s'
                        % (path, exc)) from None


def _stage(path, value):
    """Write ``value`` to a temporary file beside ``path``; its name.
    Nothing is left behind if that fails.

    The caller holds the host's lock, which every writer of the host's
    files takes, so the name needs no randomness: ``.<name>.<pid>.tmp``
    (one left by a writer that died is written over)."""
    # json.dumps without indent: json.dump and indented output never use
    # the C encoder, and took most of a write's CPU time.
    data = json.dumps(value, sort_keys=True).encode()
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, '.%s.%d.tmp' % (name, os.getpid()))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _replace_all(changes):
    """Apply ``changes`` ([(path, value or None to delete)]) in
    order, each file replaced whole (``os.replace``). Every new file is
    written before the first is replaced, so a failure while writing (a
    full disk, a value JSON cannot hold) leaves every file as it was."""
    staged = []
    try:
        for path, value in changes:
            staged.append(None if value is None else _stage(path, value))
    except BaseException:
        for tmp in staged:
            if tmp is not None:
                _unlink(tmp)
        raise
    for (path, _), tmp in zip(changes, staged, strict=True):
        if tmp is None:
            _unlink(path)
        else:
            os.replace(tmp, path)


def _unlink(path):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _journal(meta, changed):
    """``meta`` with one more gen, journaling the ``changed`` uuids."""
    gen = meta['gen'] + 1
    journal = meta['journal'] + [[gen, uuid] for uuid in changed]
    floor = meta['floor']
    drop = len(journal) - JOURNAL_LENGTH
    if drop > 0:
        floor, journal = journal[drop - 1][0], journal[drop:]
    return dict(meta, gen=gen, floor=floor, journal=journal)


class HostFiles:
    """One host's ``host.json`` and domain files, and the lock over them."""

    def __init__(self, state_dir, host):
        _check_name('host', host)
        self.host = host
        self.dir = os.path.join(store_dir(state_dir), host)
        self.domains_dir = os.path.join(self.dir, DOMAINS_SUBDIR)
        self.host_path = os.path.join(self.dir, HOST_FILE)
        self.legacy_path = os.path.join(store_dir(state_dir), host + '.json')
        self._lock_path = os.path.join(self.dir, 'lock')
        self._legacy_checked = False

    # --- reading (no lock: every file is replaced whole) ----------------------

    def meta(self):
        """``host.json``: seq, faults, gen and journal. Small, O(1)."""
        self._migrate_legacy()
        return _load(self.host_path) or _empty_meta(self.host)

    def domain(self, uuid):
        """One domain's record, or None. Reads that domain's file only."""
        self._migrate_legacy()
        return _load(self._domain_path(uuid))

    def domains(self):
        """Every domain's record by uuid: O(domains), for whole-host reads."""
        self._migrate_legacy()
        try:
            names = os.listdir(self.domains_dir)
        except FileNotFoundError:
            return {}
        out = {}
        for name in sorted(names):
            if name.startswith('.') or not name.endswith('.json'):
                continue        # a writer's temporary file
            rec = _load(os.path.join(self.domains_dir, name))
            if rec is not None:     # None: destroyed since the listing
                out[name[:-5]] = rec
        return out

    def read(self):
        """The whole host as one dict (host, seq, domains, faults):
        O(domains), for tools and tests."""
        meta = self.meta()
        return {'host': self.host, 'seq': meta['seq'],
                'domains': self.domains(), 'faults': meta['faults']}

    def changed_since(self, gen, meta):
        """Uuids of the domains changed after ``gen`` up to ``meta``'s gen,
        or None when the journal no longer reaches back to ``gen``."""
        if gen < meta['floor'] or gen > meta['gen']:
            return None
        return {uuid for entry_gen, uuid in meta['journal'] if entry_gen > gen}

    # --- writing ----------------------------------------------------------------

    @contextlib.contextmanager
    def update(self, *uuids):
        """Yield {host, seq, faults, domains}, locked, ``domains`` holding
        those of ``uuids`` that exist; write back what changed.

        The block may change ``seq`` and ``faults`` and add, change or
        delete the domains named by ``uuids``; no other domain is read or
        written, which is what keeps a change O(1). An exception inside the
        block leaves every file as it was.
        """
        for uuid in uuids:
            _check_name('domain', uuid)
        self._migrate_legacy()
        with self._locked():
            meta = _load(self.host_path)
            before = {}
            for uuid in uuids:
                rec = _load(self._domain_path(uuid))
                if rec is not None:
                    before[uuid] = rec
            current = meta or _empty_meta(self.host)
            data = {'host': self.host, 'seq': current['seq'],
                    'faults': copy.deepcopy(current['faults']),
                    'domains': copy.deepcopy(before)}
            yield data
            self._commit(meta, before, data, uuids)

    def _commit(self, meta, before, data, uuids):
        strays = set(data['domains']) - set(uuids)
        if strays:
            raise ValueError('domains %s were added but not named to '
                             'update(): name every domain the block adds or '
                             'changes'
                             % ', '.join(sorted(strays)))
        changed = sorted({uuid for uuid in uuids
                          if data['domains'].get(uuid) != before.get(uuid)})
        # Domain files first, host.json last: a watcher that sees the new
        # gen finds the new records.
        writes = [(self._domain_path(uuid), data['domains'].get(uuid))
                  for uuid in changed]
        new = dict(meta or _empty_meta(self.host), seq=data['seq'],
                   faults=data['faults'])
        if changed:
            new = _journal(new, changed)
        if new != meta:         # a new host's file is written at once
            writes.append((self.host_path, new))
        _replace_all(writes)

    @contextlib.contextmanager
    def _locked(self):
        try:
            fd = os.open(self._lock_path, os.O_WRONLY | os.O_CREAT, 0o600)
        except FileNotFoundError:       # a new host: its directories first
            os.makedirs(self.domains_dir, exist_ok=True)
            fd = os.open(self._lock_path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _domain_path(self, uuid):
        _check_name('domain', uuid)
        return os.path.join(self.domains_dir, uuid + '.json')

    # --- the single-file store of older versions --------------------------------

    def _migrate_legacy(self):
        """Turn an old ``<host>.json`` into this layout, once per object."""
        if self._legacy_checked:
            return
        if os.path.exists(self.legacy_path):
            with self._locked():
                self._migrate_locked()
        self._legacy_checked = True

    def _migrate_locked(self):
        old = _load(self.legacy_path)
        if old is None:
            return              # another process migrated it meanwhile
        if os.path.exists(self.host_path):
            raise VirtError(
                'fake host %s has an old single-file store %s and a new one '
                'in %s: remove the one that is stale'
                % (self.host, self.legacy_path, self.dir))
        try:
            domains, seq, faults = old['domains'], old['seq'], old['faults']
        except (KeyError, TypeError):
            raise VirtError('fake host store file %s is not a fake host '
                            'store: expected a JSON object with domains, seq '
                            'and faults' % self.legacy_path) from None
        _replace_all([(self._domain_path(uuid), rec)
                      for uuid, rec in domains.items()]
                     + [(self.host_path, dict(_empty_meta(self.host), seq=seq,
                                              faults=faults))])
        os.unlink(self.legacy_path)
        _unlink(self.legacy_path + '.lock')
        LOG.info('fake host %s: migrated %d domain(s) from %s to %s',
                 self.host, len(domains), self.legacy_path, self.dir)
