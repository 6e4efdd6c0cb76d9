"""Flavors, defined in configuration (``[conductor] flavors``)."""

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


def get(conf, name):
    flavors = parse(conf.conductor.flavors)
    try:
        return flavors[name]
    except KeyError:
        raise exception.Invalid(
            reason='unknown flavor %r: expected one of %s'
                   % (name, ', '.join(sorted(flavors)))) from None


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
