"""The scenarios' HTTP clients of the API: keep-alive connections posting
from threads, in the measuring process or in a child process of their own.

Why a child process (:class:`ClientProcess`, the bursts' clients): the
embedded plane runs the API, the conductor and the agents in one Python
process, whose interpreter lock lets one thread run at a time, so a burst's
rate is about one over the process's CPU per build. Clients in the same
process add their own CPU to that (half a millisecond a build, building
requests and parsing answers) though no deployment's clients share the
control plane's interpreter. In a child they run beside it, as remote
clients do; the child is started before the clock starts.

The child speaks JSON lines: it prints ``{"ready": true}`` once it has
started (each connection connects at its first request, as in-process
ones do), then answers each job read from its standard input
(``{"tag": T, "count": N}``: servers ``T0`` .. ``T<N-1>`` created, each
connection posting in turn) with ``{"uuids": [...]}`` in the order of the
names, or ``{"error": "..."}``; end of input ends it.
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

# Seconds the parent waits for the child's first line (its imports and
# connections) and for its exit once told to end.
START_TIMEOUT = 60.0
EXIT_TIMEOUT = 10.0
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Http:
    """One keep-alive connection to the API, as the noauth user ``token``
    names; :meth:`create` posts a server of ``flavor`` and ``image``."""

    def __init__(self, host, port, *, token, flavor, image):
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.headers = {'Content-Type': 'application/json',
                        'Accept': 'application/json',
                        'X-Auth-Token': token}
        self.flavor = flavor
        self.image = image

    def request(self, method, path, body=None):
        """(status, parsed body or None)."""
        data = None if body is None else json.dumps(body)
        self.conn.request(method, '/v2.1' + path, body=data,
                          headers=self.headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw else None)

    def create(self, name):
        status, body = self.request('POST', '/servers', {'server': {
            'name': name, 'flavorRef': self.flavor, 'imageRef': self.image}})
        if status != 202:
            raise RuntimeError('POST /servers answered %d: %s' % (status, body))
        return body['server']['id']

    def close(self):
        self.conn.close()


def run_clients(count, work, items):
    """Run ``work(http_index, item)`` over ``items`` from ``count`` threads
    (each item once); return (results in item order, wall seconds)."""
    results = [None] * len(items)
    lock = threading.Lock()
    todo = iter(range(len(items)))
    errors = []

    def client(index):
        while not errors:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = work(index, items[i])
            except Exception as err:     # reported by the caller
                errors.append(err)
    threads = [threading.Thread(target=client, args=(n,)) for n in range(count)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results, time.monotonic() - started


class ClientProcess:
    """``clients`` connections to ``host``:``port`` in a child process; a
    context manager. :meth:`create` runs one job there."""

    def __init__(self, host, port, clients, *, token, flavor, image,
                 cpus=None):
        self.args = [sys.executable, '-m', 'bench.clients', host, str(port),
                     '--clients', str(clients), '--token', token,
                     '--flavor', flavor, '--image', image]
        if cpus:        # not the measuring process's pinned CPU alone
            self.args += ['--cpus', ','.join(str(c) for c in sorted(cpus))]
        self.proc = None

    def __enter__(self):
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            p for p in (_ROOT, env.get('PYTHONPATH')) if p)
        self.proc = subprocess.Popen(self.args, cwd=_ROOT, env=env,
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        try:
            self._answer(START_TIMEOUT, 'ready')
        except BaseException:
            self._end()
            raise
        return self

    def __exit__(self, *exc):
        self._end()

    def create(self, tag, count, *, timeout):
        """Uuids of servers ``<tag>0`` .. ``<tag><count-1>``, in order."""
        self.proc.stdin.write(json.dumps({'tag': tag, 'count': count}) + '\n')
        self.proc.stdin.flush()
        return self._answer(timeout, 'uuids')

    def _answer(self, timeout, key):
        """The value of ``key`` in the child's next line, read within
        ``timeout`` seconds; RuntimeError if it says an error, ends or
        says nothing in time."""
        lines = []
        reader = threading.Thread(
            target=lambda: lines.append(self.proc.stdout.readline()),
            daemon=True)
        reader.start()
        reader.join(timeout)
        if not lines:
            self.proc.kill()
            raise RuntimeError('the bench clients said nothing in %.0f s'
                               % timeout)
        if not lines[0]:
            raise RuntimeError('the bench clients ended (exit status %s)'
                               % self.proc.wait(EXIT_TIMEOUT))
        answer = json.loads(lines[0])
        if 'error' in answer:
            raise RuntimeError('bench client: %s' % answer['error'])
        return answer[key]

    def _end(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(EXIT_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            proc.stdout.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.clients',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('host')
    parser.add_argument('port', type=int)
    parser.add_argument('--clients', type=int, required=True)
    parser.add_argument('--token', required=True)
    parser.add_argument('--flavor', required=True)
    parser.add_argument('--image', required=True)
    parser.add_argument('--cpus', help='the CPUs to run on (0,1,...): a '
                        'child inherits its parent\'s, which may be pinned')
    args = parser.parse_args(argv)
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(',')})
    conns = [Http(args.host, args.port, token=args.token, flavor=args.flavor,
                  image=args.image) for _ in range(args.clients)]

    def say(answer):
        sys.stdout.write(json.dumps(answer) + '\n')
        sys.stdout.flush()
    say({'ready': True})
    try:
        for line in sys.stdin:
            job = json.loads(line)
            names = ['%s%d' % (job['tag'], i) for i in range(job['count'])]
            try:
                uuids, _ = run_clients(
                    args.clients, lambda n, name: conns[n].create(name),
                    names)
            except Exception as err:        # told to the parent
                say({'error': '%s: %s' % (type(err).__name__, err)})
            else:
                say({'uuids': uuids})
    finally:
        for conn in conns:
            conn.close()


if __name__ == '__main__':
    main()
