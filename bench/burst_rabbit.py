"""The build burst with the conductor and the agents as separate processes,
on RabbitMQ and PostgreSQL.

Target: ≥ 50 servers/s. One ``tristate-conductor`` and ``--hosts``
``tristate-compute-agent`` processes (fake driver) are started as
tests/integration does; this process is the API tier (the REST API on a
free port, its conductor client with database access), and
``--clients`` concurrent HTTP clients post ``--builds`` servers. Broker
and database: see :mod:`bench.services`. Each of the ``--rounds`` runs
starts its own daemons on a fresh database; the figure is the median.
"""

from bench import burst as burst_mod
from bench import core
from bench import imagedata
from bench import plane as plane_mod
from bench import services
from common import context
from common import rpc
from common.db import api as db_api
from common.db import engine
from conductor import rpcapi

NAME = 'burst_rabbit'
TINY = ['--builds', '8', '--hosts', '2', '--rounds', '1']


def add_arguments(parser):
    parser.add_argument('--builds', type=int, default=200)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--hosts', type=int, default=4)
    core.add_rounds(parser)


class ApiTier:
    """This process as the API tier of separate daemons."""

    http = plane_mod.Plane.http
    client_process = plane_mod.Plane.client_process
    cpus = None     # not pinned: the clients' child keeps its CPUs
    wait_all_active = plane_mod.Plane.wait_all_active

    def __init__(self, daemons):
        from api import service as api_service
        self.conf = daemons.conf()
        self.conf.set_override('auth_strategy', 'noauth', group='api')
        database = engine.Database(daemons.db_url)
        self.statedb = db_api.StateDB(database)
        imagedata.register_image(self.conf, self.statedb)
        self.bus = rpc.Bus(self.conf)
        ctx = context.get_admin_context()
        services.wait_conductor(rpcapi.ConductorAPI(self.bus, self.conf,
                                                    timeout=1), ctx)
        daemons.start_agents(self.statedb)
        client = api_service.make_client(self.conf, self.bus, self.statedb)
        self.api = api_service.serve(self.conf, client, host='127.0.0.1',
                                     port=0)

    def stop(self):
        self.api.stop()
        self.bus.cleanup()
        self.statedb.db.dispose()
        self.conf.reset()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def one_round(args, rabbit, server):
    """Seconds of one burst, with daemons of its own on a fresh database."""
    with services.round_daemons(rabbit, server, hosts=args.hosts) as daemons:
        daemons.start_conductor()
        with ApiTier(daemons) as tier:
            seconds = burst_mod.burst(tier, args.builds, args.clients, 'r')
            daemons.check_alive()
    return seconds


def run(args):
    plane_mod.quiet_logs()
    with services.broker_and_server() as (rabbit, server):
        rates = [args.builds / one_round(args, rabbit, server)
                 for _ in range(args.rounds)]
    size = ('%d builds, %d clients, %d agent processes, RabbitMQ + PostgreSQL'
            % (args.builds, args.clients, args.hosts))
    if args.rounds > 1:
        size += ', %d rounds' % args.rounds
    return [core.Figure(NAME, 'burst of %d to all ACTIVE' % args.builds,
                        core.median(rates), 'servers/s', '>=', 50,
                        size=size, note=core.rounds_note(rates))]
