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
