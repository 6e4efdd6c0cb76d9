"""Guest NUMA cells: a flavor's ``hw:numa_*`` extra specs, checked as Nova
checks them, and the cells they give the guest.

Two checks, at the two moments Nova makes them:

* when a flavor's extra specs are set (:func:`check_spec`): each value's
  type and form (``hw:numa_nodes`` a whole number of at least 1,
  ``hw:numa_cpus.N`` a CPU list such as ``0-1,^1,3``, ``hw:numa_mem.N``
  MiB, at least 1);
* when a server is created with the flavor (:func:`cells_of`): the cells
  must cover the flavor exactly: without ``numa_cpus``/``numa_mem`` the
  node count must divide both the vCPUs and the memory (then each cell
  gets an equal share, in order); with them, both lists must be given for
  every node, every vCPU in exactly one cell, none beyond the flavor's,
  and the memory must add up to the flavor's.

A topology of more than one cell is stored on the instance
(``instances.numa_cells``, JSON ``[{"id", "cpus", "memory_mb"}]``) and
becomes ``<cpu><numa><cell .../></numa></cpu>`` in the domain
(:mod:`compute_agent.virt.libvirt.config`). One cell is what every guest
has anyway: nothing is stored. The guest's cells are not bound to the
host's NUMA nodes (Tristate's scheduler places by vCPU, RAM and disk).
"""

import re

from common import exception

NODES = 'hw:numa_nodes'
CPUS = 'hw:numa_cpus'
MEM = 'hw:numa_mem'
# The most guest NUMA nodes (Nova's ImageMetaProps.NUMA_NODES_MAX).
MAX_NODES = 128

_CELL_KEY = re.compile(r'hw:numa_(cpus|mem)\.(\d+)')
# Nova's validator's pattern for a CPU map.
_CPU_MAP = re.compile(r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*')


def is_numa_key(key):
    return key == NODES or _CELL_KEY.fullmatch(key) is not None


def _invalid(key, value, expected):
    return exception.Invalid(
        'Invalid input for field/attribute extra_specs.%s. Value: %s. '
        'Expected %s' % (key, value, expected))


def check_spec(key, value):
    """Raise :class:`~common.exception.Invalid` naming ``key`` unless
    ``value`` is of the form Nova's validator takes for it."""
    value = str(value)
    if key == NODES or key.startswith(MEM + '.'):
        if not re.fullmatch(r'\d+', value.strip()) or int(value) < 1:
            raise _invalid(key, value, 'a whole number of at least 1')
        return
    if not _CPU_MAP.fullmatch(value):
        raise _invalid(key, value, 'a CPU list such as "0-3,^2,5"')


def parse_cpus(text):
    """The set of CPUs a CPU list names (``0-3,^2,5`` is {0, 1, 3, 5})."""
    wanted, unwanted = set(), set()
    for piece in str(text).split(','):
        into = unwanted if piece.strip().startswith('^') else wanted
        part = piece.strip().lstrip('^')
        if not re.fullmatch(r'\d+(-\d+)?', part):
            raise exception.Invalid('Invalid range expression %r' % text)
        low, _, high = part.partition('-')
        high = high or low
        if int(low) > int(high):
            raise exception.Invalid('Invalid range expression %r' % text)
        into.update(range(int(low), int(high) + 1))
    return wanted - unwanted


def _mapping(specs, prefix, parse):
    """Nova's reading of ``prefix.0``, ``prefix.1``, ... up to the first
    one missing; None when there is no ``prefix.0``."""
    found = []
    for node in range(MAX_NODES):
        key = '%s.%d' % (prefix, node)
        if key not in specs:
            break
        found.append(parse(specs[key]))
    return found or None


def _node_count(specs):
    nodes = specs.get(NODES)
    if nodes is None:
        return None
    if not re.fullmatch(r'\s*\d+\s*', str(nodes)) or int(nodes) < 1:
        raise exception.Invalid("The property 'numa_nodes' cannot be '%s'. "
                                "It must be a number greater than 0" % nodes)
    return int(nodes)


def _auto(nodes, vcpus, memory_mb):
    if vcpus % nodes or memory_mb % nodes:
        raise exception.Invalid(
            'Instance CPUs and/or memory cannot be evenly distributed across '
            'instance NUMA nodes. Explicit assignment of CPUs and memory to '
            'nodes is required')
    share = vcpus // nodes
    return [(set(range(node * share, (node + 1) * share)), memory_mb // nodes)
            for node in range(nodes)]


def _manual(nodes, vcpus, memory_mb, cpu_list, mem_list):
    if len(cpu_list) != nodes or len(mem_list) != nodes:
        raise exception.Invalid('CPU and memory allocation must be provided '
                                'for all NUMA nodes')
    free = set(range(vcpus))
    for cpus in cpu_list:
        for cpu in sorted(cpus):
            if cpu > vcpus - 1:
                raise exception.Invalid('CPU number %d is larger than max %d'
                                        % (cpu, vcpus - 1))
            if cpu not in free:
                raise exception.Invalid('CPU number %d is assigned to two '
                                        'nodes' % cpu)
            free.discard(cpu)
    if free:
        raise exception.Invalid('CPU number %s is not assigned to any node'
                                % (free,))
    if sum(mem_list) != memory_mb:
        raise exception.Invalid('%d MB of memory assigned, but expected %d MB'
                                % (sum(mem_list), memory_mb))
    return list(zip(cpu_list, mem_list, strict=True))


def format_cpus(cpus):
    """A CPU set as libvirt writes it: ranges, e.g. ``0-1,4``."""
    cpus = sorted(cpus)
    runs = []
    for cpu in cpus:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b) for a, b in runs)


def cells_of(specs, vcpus, memory_mb):
    """The guest's NUMA cells for a flavor of ``vcpus`` and ``memory_mb``
    with extra specs ``specs``: ``[{"id", "cpus", "memory_mb"}]`` when
    there is more than one, else None. Raises
    :class:`~common.exception.Invalid` with Nova's message when the specs
    do not describe a topology of the flavor."""
    specs = specs or {}
    nodes = _node_count(specs)
    cpu_list = _mapping(specs, CPUS, parse_cpus)
    mem_list = _mapping(specs, MEM, int)
    if nodes is None and cpu_list is None and mem_list is None:
        return None
    nodes = nodes or 1
    if cpu_list is None and mem_list is None:
        cells = _auto(nodes, vcpus, memory_mb)
    elif cpu_list is not None and mem_list is not None:
        cells = _manual(nodes, vcpus, memory_mb, cpu_list, mem_list)
    else:
        raise exception.Invalid('CPU and memory allocation must be provided '
                                'for all NUMA nodes')
    if len(cells) < 2:
        return None
    return [{'id': i, 'cpus': format_cpus(cpus), 'memory_mb': mem}
            for i, (cpus, mem) in enumerate(cells)]
