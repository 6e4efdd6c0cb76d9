"""Concurrent conflicting actions on one instance through the API.

Target: exactly one accepted, all answered within 1 s. ``--actions``
threads, each with its own connection already open, wait on a barrier and
then send ``{"os-stop": null}`` for the same ACTIVE instance at once; one
must get 202, every other 409, and the slowest answer (counted from the
barrier) must come within a second.
"""

import threading
import time

from bench import core
from bench import plane as plane_mod

NAME = 'conflicts'
TINY = ['--actions', '10']


def add_arguments(parser):
    parser.add_argument('--actions', type=int, default=100)
    parser.add_argument('--hosts', type=int, default=2)


def _storm(plane, uuid, count):
    conns = [plane.http() for _ in range(count)]
    for conn in conns:            # connect before the start: time the answers
        conn.request('GET', '/servers/%s' % uuid)
    barrier = threading.Barrier(count + 1)
    answers = [None] * count

    def act(n):
        barrier.wait()
        status, _ = conns[n].request('POST', '/servers/%s/action' % uuid,
                                     {'os-stop': None})
        answers[n] = (status, time.monotonic())
    threads = [threading.Thread(target=act, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join()
    for conn in conns:
        conn.close()
    return [(status, at - started) for status, at in answers]


def run(args):
    with plane_mod.Plane(hosts=args.hosts) as plane:
        uuid = plane.build_direct(1)[0]
        answers = _storm(plane, uuid, args.actions)
    accepted = sum(1 for status, _ in answers if status == 202)
    refused = sum(1 for status, _ in answers if status == 409)
    slowest = max(at for _, at in answers)
    size = '%d concurrent os-stop on one instance' % args.actions
    return [
        core.Figure(NAME, 'accepted (202)', accepted, 'actions', '==', 1,
                    size=size),
        core.Figure(NAME, 'refused (409)', refused, 'actions', '==',
                    args.actions - 1, size=size),
        core.Figure(NAME, 'slowest answer', slowest * 1e3, 'ms', '<=', 1000,
                    size=size),
    ]
