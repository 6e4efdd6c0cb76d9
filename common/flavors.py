"""Flavors: the sizes an instance is built with.

They live in the database (:mod:`common.db.flavors`, served by
``/flavors``); the configured ``[conductor] flavors`` are inserted there
the first time a process reads flavors (:func:`seeded`), each once.
"""

import dataclasses

from common import exception


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int

    def to_dict(self):
        return dataclasses.asdict(self)


def parse(definitions):
    """{name: Flavor} from NAME:VCPUS:MEMORY_MB:DISK_GB strings."""
    flavors = {}
    for text in definitions:
        parts = text.split(':')
        try:
            name, vcpus, memory_mb, disk_gb = parts
            flavor = Flavor(name, int(vcpus), int(memory_mb), int(disk_gb))
        except ValueError:
            raise exception.Invalid(
                reason='flavor definition %r: expected NAME:VCPUS:MEMORY_MB:'
                       'DISK_GB with whole numbers' % text) from None
        flavors[name] = flavor
    return flavors


def seeded(conf, statedb):
    """``statedb``, once the configured flavors are in it (inserted by the
    first call of each process, per database and configuration)."""
    key = tuple(conf.conductor.flavors)
    if getattr(statedb, '_flavors_seeded', None) != key:
        statedb.seed_flavors(list(parse(key).values()))
        statedb._flavors_seeded = key
    return statedb


def get(conf, statedb, flavorid, ctx=None):
    """The :class:`Flavor` of id ``flavorid`` (its ``name`` is the
    flavor's name); 400 naming the flavors there are if there is none, or
    if ``ctx`` (a non-admin's) may not use it (a private flavor its project
    has no access to, as Nova)."""
    return of_row(get_row(conf, statedb, flavorid, ctx))


def get_row(conf, statedb, flavorid, ctx=None):
    """As :func:`get`, the flavor's row (with its ``extra_specs``)."""
    try:
        row = seeded(conf, statedb).get_flavor(flavorid, projects=True)
        if not usable(row, ctx):
            raise exception.NotFound()
    except exception.NotFound:
        known = [f['flavorid'] for f in statedb.list_flavors(
            is_public=True if ctx is None or not ctx.is_admin else None,
            project_id=None if ctx is None else ctx.project_id)]
        raise exception.Invalid(
            reason='unknown flavor %r: expected one of %s'
                   % (flavorid, ', '.join(sorted(known)))) from None
    return row


def usable(row, ctx):
    """Whether ``ctx`` may boot flavor ``row`` (with its ``projects``)."""
    return (row['is_public'] or ctx is None or ctx.is_admin
            or ctx.project_id in row.get('projects', ()))


def of_row(row):
    return Flavor(row['name'], row['vcpus'], row['memory_mb'],
                  row['disk_gb'])


def configured(conf, name):
    """The configured flavor ``name`` (``[conductor] flavors``), not read
    from the database: for benchmarks and tests that size hosts by it."""
    return parse(conf.conductor.flavors)[name]


def of_instance(inst):
    return Flavor(inst['flavor_name'], inst['vcpus'], inst['memory_mb'],
                  inst['disk_gb'])


def problems(definitions):
    """What is wrong with ``[conductor] flavors``, one string per entry
    (none when every entry is NAME:VCPUS:MEMORY_MB:DISK_GB with VCPUS and
    MEMORY_MB >= 1, DISK_GB >= 0, and names unique)."""
    found, seen = [], set()
    for text in definitions:
        parts = text.split(':')
        numbers = parts[1:]
        if (len(parts) != 4 or not parts[0]
                or not all(n.isdigit() for n in numbers)
                or int(numbers[0]) < 1 or int(numbers[1]) < 1):
            found.append('%r: expected NAME:VCPUS:MEMORY_MB:DISK_GB, whole '
                         'numbers, VCPUS and MEMORY_MB >= 1, DISK_GB >= 0'
                         % text)
        elif parts[0] in seen:
            found.append('%r: flavor %s is defined twice' % (text, parts[0]))
        else:
            seen.add(parts[0])
    return found
