"""``[DEFAULT] pin_to_cpu``: every thread of a daemon on one CPU.

Why: a Tristate daemon is one Python process, whose interpreter lock lets
one thread run Python at a time, so it never uses much more than one core;
but its threads hand that lock to each other whenever one waits (on the
database, a file, the bus, a socket), hundreds of times a build. When the
kernel spreads the threads over several CPUs, each such hand-over wakes a
thread on another CPU; on a virtual machine those cross-CPU wake-ups are
costly and their cost moves with the host's load. Measured on this
project's 2-core test machine (bench/RESULTS.md, eighteenth session), the
embedded plane's burst of builds: pinned to one CPU, 56 voluntary context
switches a build instead of 176, 1.3 ms of system time instead of 3.8, and
98-132 servers/s where the same code unpinned ran 70-89 at the same time.

Pinning gives up running the threads' waits (the work done with the lock
released: SQLite's own work, file and socket writes) on another CPU at the
same time as Python; that is worth less than the hand-overs it saves for
the work Tristate does. Give each pinned daemon of a host a CPU of its
own, and leave the others to the guests and the other services.

The process's threads that exist are moved (until a pass finds none left
to move: a thread started meanwhile by one not yet moved is caught by the
next pass), and every thread started afterwards inherits its creator's
CPU, so a daemon pins itself as it starts, before its threads do.
"""

import os

# Passes over the process's threads: each moves those not yet on the CPU;
# a thread can appear only while its creator is still unmoved.
MAX_PASSES = 10


def problems(conf):
    """Why ``[DEFAULT] pin_to_cpu`` cannot be applied: [] or one line."""
    cpu = conf.pin_to_cpu
    if cpu is None:
        return []
    allowed = os.sched_getaffinity(0)
    if cpu not in allowed:
        return ['[DEFAULT] pin_to_cpu: CPU %d is not one this process may '
                'run on (%s)' % (cpu, cpu_list(allowed))]
    return []


def cpu_list(cpus):
    """``cpus`` as Linux writes a CPU list: ``0-3,6``."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu != run[-1] + 1:
            out.append(_span(run))
            run = []
        run.append(cpu)
    if run:
        out.append(_span(run))
    return ','.join(out)


def _span(run):
    return str(run[0]) if len(run) == 1 else '%d-%d' % (run[0], run[-1])


def threads():
    """The ids of this process's threads (Linux: ``/proc/self/task``)."""
    return [int(tid) for tid in os.listdir('/proc/self/task')]


def set_all(cpus):
    """Every thread of this process, and every one they start from now on,
    on ``cpus`` (a set of CPU numbers) only."""
    cpus = set(cpus)
    for _ in range(MAX_PASSES):
        moved = 0
        for tid in threads():
            try:
                if os.sched_getaffinity(tid) != cpus:
                    os.sched_setaffinity(tid, cpus)
                    moved += 1
            except ProcessLookupError:
                continue        # the thread ended meanwhile
        if not moved:
            return
    raise RuntimeError('threads kept appearing off CPUs %s after %d passes'
                       % (cpu_list(cpus), MAX_PASSES))


def apply(conf):
    """Pin this process to ``[DEFAULT] pin_to_cpu`` if it is set (checked
    by :func:`problems` first); True if it was."""
    if conf.pin_to_cpu is None:
        return False
    set_all({conf.pin_to_cpu})
    return True
