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

import re2

from common import exception

NODES = 'hw:numa_nodes'
CPUS = 'hw:numa_cpus'
MEM = 'hw:numa_mem'
# The most guest NUMA nodes (Nova's ImageMetaProps.NUMA_NODES_MAX, QEMU's
# MAX_NODES): a larger hw:numa_nodes is refused, not failed on the host.
MAX_NODES = 128
# The largest memory of one cell: a flavor's largest RAM (MiB).
MAX_MEMORY_MB = 2 ** 31 - 1
# The most vCPUs a guest with NUMA cells may have (QEMU's q35 machine's
# max_cpus): a flavor may name up to 2**31 - 1, but cells of more are
# refused at create, not stored (the topology route lists every vCPU).
MAX_VCPUS = 4096

_CELL_KEY = re.compile(r'hw:numa_(cpus|mem)\.(\d+)')
# Nova's validator's pattern for a CPU map, matched by RE2: in Python's re
# it backtracks exponentially (``0,1-2,1-2,...x``: each ``-2`` reads two
# ways), 20 pieces taking hours.
_CPU_MAP = re2.compile(r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*')
_WHOLE = re.compile(r'\s*([0-9]+)\s*')
_RANGE = re.compile(r'([0-9]+)(?:-([0-9]+))?')
# A CPU number of more digits than this is beyond any flavor's vCPUs
# (never converted: Python refuses to convert 4,300 digits or more).
_DIGITS = 12
_BEYOND = 10 ** _DIGITS


def is_numa_key(key):
    return key == NODES or _CELL_KEY.fullmatch(key) is not None


def _invalid(key, value, expected):
    return exception.Invalid(
        'Invalid input for field/attribute extra_specs.%s. Value: %s. '
        'Expected %s' % (key, value, expected))


def _whole(text, most):
    """The whole number ``text`` names if it is one from 1 to ``most``,
    else None (never converting more digits than ``most`` has)."""
    found = _WHOLE.fullmatch(str(text))
    if found is None:
        return None
    digits = found.group(1).lstrip('0')
    if not digits or len(digits) > len(str(most)) or int(digits) > most:
        return None
    return int(digits)


def _node_number(text):
    """The node a cell key's number names, when it is one from 0 to
    ``MAX_NODES - 1`` written as :func:`_mapping` looks it up (digits
    0-9, no leading zero); else None."""
    if text == '0':
        return 0
    return None if text.startswith('0') else _whole(text, MAX_NODES - 1)


def check_spec(key, value):
    """Raise :class:`~common.exception.Invalid` naming ``key`` unless
    ``value`` is of the form Nova's validator takes for it (and a count
    or size Tristate can give a guest)."""
    value = str(value)
    cell = _CELL_KEY.fullmatch(key)
    if cell is not None and _node_number(cell.group(2)) is None:
        # a cell no guest can have, or a node written as no reading of the
        # cells (_mapping: hw:numa_cpus.0, .1, ...) looks it up: stored,
        # it would never be read
        raise exception.Invalid(
            'Invalid input for field/attribute extra_specs.%s. Expected '
            'a NUMA node number from 0 to %d, without a leading zero, '
            'after "hw:numa_%s."' % (key, MAX_NODES - 1, cell.group(1)))
    if key == NODES:
        if _whole(value, MAX_NODES) is None:
            raise _invalid(key, value, 'a whole number of at least 1 and '
                           'at most %d' % MAX_NODES)
        return
    if key.startswith(MEM + '.'):
        if _whole(value, MAX_MEMORY_MB) is None:
            raise _invalid(key, value, 'a whole number of MiB, at least 1 '
                           'and at most %d' % MAX_MEMORY_MB)
        return
    if not _CPU_MAP.fullmatch(value):
        raise _invalid(key, value, 'a CPU list such as "0-3,^2,5"')


def _number(digits):
    digits = digits.lstrip('0') or '0'
    return _BEYOND if len(digits) > _DIGITS else int(digits)


def _merged(ranges):
    """Sorted, disjoint, inclusive ``(low, high)`` ranges covering
    ``ranges``."""
    merged = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [tuple(pair) for pair in merged]


def _without(wanted, unwanted):
    """The ranges of ``wanted`` less ``unwanted`` (both merged)."""
    left, cuts = [], list(unwanted)
    for low, high in wanted:
        start = low
        for cut_low, cut_high in cuts:
            if cut_high < start or cut_low > high:
                continue
            if cut_low > start:
                left.append((start, cut_low - 1))
            start = cut_high + 1
            if start > high:
                break
        if start <= high:
            left.append((start, high))
    return left


def parse_cpus(text):
    """The CPUs a CPU list names, as sorted disjoint inclusive ranges
    (``0-3,^2,5`` is ``[(0, 1), (3, 3), (5, 5)]``): never a set of every
    CPU, whatever the range (``0-4294967295``)."""
    wanted, unwanted = [], []
    for piece in str(text).split(','):
        into = unwanted if piece.strip().startswith('^') else wanted
        found = _RANGE.fullmatch(piece.strip().lstrip('^'))
        if found is None:
            raise exception.Invalid('Invalid range expression %r' % text)
        low = _number(found.group(1))
        high = _number(found.group(2)) if found.group(2) else low
        if low > high:
            raise exception.Invalid('Invalid range expression %r' % text)
        into.append((low, high))
    return _without(_merged(wanted), _merged(unwanted))


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
    count = _whole(nodes, MAX_NODES)
    if count is None:
        raise exception.Invalid("The property 'numa_nodes' cannot be '%s'. "
                                "It must be a number greater than 0 and at "
                                "most %d" % (nodes, MAX_NODES))
    return count


def _memory(value):
    size = _whole(value, MAX_MEMORY_MB)
    if size is None:
        raise exception.Invalid('Invalid memory size %r of a NUMA node: a '
                                'whole number of MiB, at least 1 and at most '
                                '%d' % (value, MAX_MEMORY_MB))
    return size


def _auto(nodes, vcpus, memory_mb):
    if vcpus % nodes or memory_mb % nodes:
        raise exception.Invalid(
            'Instance CPUs and/or memory cannot be evenly distributed across '
            'instance NUMA nodes. Explicit assignment of CPUs and memory to '
            'nodes is required')
    share = vcpus // nodes
    return [([(node * share, (node + 1) * share - 1)], memory_mb // nodes)
            for node in range(nodes)]


def _check_bounds(vcpus, cpu_list):
    for node, ranges in enumerate(cpu_list):
        if not ranges:
            raise exception.Invalid('NUMA node %d has no CPU: its list '
                                    'excludes every CPU it names' % node)
        for low, high in ranges:
            if high > vcpus - 1:
                raise exception.Invalid('CPU number %d is larger than max %d'
                                        % (max(low, vcpus), vcpus - 1))


def _check_cover(vcpus, cpu_list):
    """Every vCPU in exactly one cell (each cell's ranges are disjoint)."""
    every = sorted(r for ranges in cpu_list for r in ranges)
    for (_, high), (low, _) in zip(every, every[1:], strict=False):
        if low <= high:
            raise exception.Invalid('CPU number %d is assigned to two '
                                    'nodes' % low)
    gaps, expected = [], 0
    for low, high in every + [(vcpus, vcpus)]:
        if low > expected:
            gaps.append((expected, low - 1))
        expected = high + 1
    if gaps:
        raise exception.Invalid('CPU number %s is not assigned to any node'
                                % format_cpus(gaps))


def _manual(nodes, vcpus, memory_mb, cpu_list, mem_list):
    if len(cpu_list) != nodes or len(mem_list) != nodes:
        raise exception.Invalid('CPU and memory allocation must be provided '
                                'for all NUMA nodes')
    _check_bounds(vcpus, cpu_list)
    _check_cover(vcpus, cpu_list)
    if sum(mem_list) != memory_mb:
        raise exception.Invalid('%d MB of memory assigned, but expected %d MB'
                                % (sum(mem_list), memory_mb))
    return list(zip(cpu_list, mem_list, strict=True))


def format_cpus(ranges):
    """CPU ranges (sorted, disjoint, inclusive) as libvirt writes them,
    e.g. ``0-1,4``."""
    return ','.join(str(low) if low == high else '%d-%d' % (low, high)
                    for low, high in ranges)


def cells_of(specs, vcpus, memory_mb):
    """The guest's NUMA cells for a flavor of ``vcpus`` and ``memory_mb``
    with extra specs ``specs``: ``[{"id", "cpus", "memory_mb"}]`` when
    there is more than one, else None. Raises
    :class:`~common.exception.Invalid` with Nova's message when the specs
    do not describe a topology of the flavor. CPUs are handled as ranges,
    never one by one: the work is bounded by the specs' length, not by the
    numbers in them or the flavor's vCPUs."""
    specs = specs or {}
    nodes = _node_count(specs)
    cpu_list = _mapping(specs, CPUS, parse_cpus)
    mem_list = _mapping(specs, MEM, _memory)
    if nodes is None and cpu_list is None and mem_list is None:
        return None
    nodes = nodes or 1
    if vcpus > MAX_VCPUS and max(nodes, len(cpu_list or ()),
                                 len(mem_list or ())) > 1:
        raise exception.Invalid(
            'A guest NUMA topology of %d vCPUs: a guest with NUMA cells '
            'has at most %d vCPUs (QEMU\'s most)' % (vcpus, MAX_VCPUS))
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
