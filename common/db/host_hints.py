"""Nova's ``same_host`` and ``different_host`` scheduler hints (issue 22):
what they mean, and the rules the scheduler places an instance by.

A create may name servers (uuids, ``instances.scheduler_hints``: migration
0021) that the new server must share a host with (``same_host``: a host
holding *any* of them, as Nova's SameHostFilter) or must not (
``different_host``: no host holding *any* of them, DifferentHostFilter).
Every placement of the instance honours them: its build (and the build of
a buried one rebuilt), an evacuation, a cold or live migration, a resize
and an unshelve, as Nova re-applies the hints kept in its request spec;
not the moves an admin forces onto a host (Nova skips its scheduler for
them), nor a rebuild on the host it has (Nova's filters do not run on a
rebuild).

What "on a host" means: the host where the server holds an allocation
(``allocations``), as for server groups (:mod:`common.db.server_groups`):
a server being moved counts on both its hosts until the move ends, and
one that holds nothing (buried, shelved offloaded, deleted, or no server
at all) is on no host. So a named server that does not exist or is
deleted is ignored by ``different_host`` and, in ``same_host``, leaves no
host to choose when it is the only one named (Nova answers the same: its
filters look at the instances each host holds). Only servers of the
placed instance's own project count: a server of another project is as
one that does not exist, so that no one learns where another project's
servers are, or lands beside them, by naming their uuids (Nova counts any
project's).

Why no lock is needed (the design; server groups lock their row, see
:mod:`common.db.server_groups`). The named servers' allocations are read
in the transaction that searches and allocates, one statement, which sees
what is committed when it starts. A hint names only servers that existed
when the create was asked (a new server's uuid is made by its create), so
the hints form no cycle: a placement reads the servers it names, never
the one placed, and no placement reads the server that names it. Then
every interleaving of concurrent placements, on any number of conductors,
ends as some one-at-a-time order of them would: a named server placed or
moved at the same moment is either seen (its allocation committed before
the read) or placed after this one, as it would be had it come second.
Server groups are different: members read each other (a cycle), which
their row lock serialises; an instance in a group and with hints is
placed under that lock too. Locking the named servers' rows as well
would serialise nothing the argument above leaves open, and could
deadlock with a placement of a named server at the same moment (that
one updates its host's row, then its own; this one would hold the named
row, then update a host's), which PostgreSQL breaks only after its
``deadlock_timeout``: so there is no such lock.
"""

import uuid as uuidlib

import sqlalchemy as sa

from common import exception
from common.db import models
from common.db import prepared

I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
A = models.Allocation.__table__
H = models.Host.__table__

SAME = 'same_host'
DIFFERENT = 'different_host'
HINTS = (SAME, DIFFERENT)
# Every placement reads this (most find nothing): built once.
_HINTS = prepared.Prepared(sa.select(I.c.scheduler_hints, I.c.project_id)
                           .where(I.c.uuid == prepared.bind('uuid')))


def validate(hints):
    """The hints a create carried over the bus (the API checked the
    request's shape), as stored: ``{hint: [uuid, ...]}``, each uuid
    canonical; None when neither hint names a server."""
    if not isinstance(hints, dict) or not set(hints) <= set(HINTS):
        raise exception.Invalid(reason='scheduler_hints: an object of %s, '
                                'got %r' % (' and '.join(HINTS), hints))
    found = {}
    for hint, values in sorted(hints.items()):
        try:
            if not isinstance(values, list) or not all(
                    isinstance(v, str) for v in values):
                raise ValueError(values)
            uuids = list(dict.fromkeys(str(uuidlib.UUID(v)) for v in values))
        except ValueError:
            raise exception.Invalid(
                reason='scheduler_hints.%s: a list of server uuids, got %r'
                % (hint, values)) from None
        if uuids:
            found[hint] = uuids
    return found or None


def placement(conn, instance_uuid):
    """The instance's hints with where the servers they name are:
    ``{"same_host": [...], "different_host": [...], "on": {uuid: [host,
    ...]}}`` (``on``: the named servers of its project holding an
    allocation, without the instance itself); None when it has none."""
    row = _HINTS.one(conn, uuid=instance_uuid)
    if row is None or not row['scheduler_hints']:
        return None
    project_id = row['project_id']
    hints = {hint: list(row['scheduler_hints'].get(hint) or ())
             for hint in HINTS}
    named = sorted(set(hints[SAME] + hints[DIFFERENT]) - {instance_uuid})
    on = {}
    if named:
        rows = conn.execute(
            sa.select(A.c.instance_uuid, A.c.host).distinct()
            .join(I, I.c.uuid == A.c.instance_uuid)
            .where(A.c.instance_uuid.in_(named),
                   I.c.project_id == project_id))
        for uuid, host in rows:
            on.setdefault(uuid, set()).add(host)
    hints['on'] = {uuid: sorted(hosts) for uuid, hosts in on.items()}
    return hints


def _hosts(hinted, hint):
    return {host for uuid in hinted[hint]
            for host in hinted['on'].get(uuid, ())}


def _allowed(hinted, only, exclude):
    """(the hosts ``different_host`` adds to ``exclude``, the hosts
    ``same_host`` allows or None when it is not given)."""
    excluded = set(exclude) | _hosts(hinted, DIFFERENT)
    if not hinted[SAME]:
        return excluded, None
    allowed = _hosts(hinted, SAME) - excluded
    if only is not None:
        allowed &= {only}
    return excluded, allowed


def leaves_none(hinted, *, only, exclude):
    """Whether the hints alone leave no host to choose."""
    return hinted is not None and _allowed(hinted, only, exclude)[1] == set()


def narrow(conn, hinted, *, only, exclude):
    """The search an instance's placement makes under its hints: (only,
    exclude), or None when they leave no host. ``different_host`` adds
    the named servers' hosts to ``exclude``; ``same_host`` keeps only
    their hosts (as ``only`` when it is one, else by excluding every
    other host)."""
    excluded, allowed = _allowed(hinted, only, exclude)
    if allowed is None:
        return only, sorted(excluded)
    if not allowed:
        return None
    if len(allowed) == 1:
        return allowed.pop(), sorted(excluded)
    others = conn.execute(sa.select(H.c.name).where(
        H.c.name.not_in(sorted(allowed)))).scalars()
    return None, sorted(excluded | set(others))


def explain(hinted):
    """Why the hints found no host, for the burial's reason: ``no host
    satisfies same_host <uuids> (on <hosts>)``."""
    parts = []
    for hint in HINTS:
        if not hinted[hint]:
            continue
        hosts = sorted(_hosts(hinted, hint))
        parts.append('%s %s (%s)' % (
            hint, ', '.join(hinted[hint]),
            ('on ' + ', '.join(hosts)) if hosts else
            'none of them is on a host'))
    return 'no host satisfies ' + ' and '.join(parts)
