"""Leases in the conductor (DESIGN.md section 7): advance reservations of
whole hosts, with Blazar's statuses (the rules: :mod:`common.leases`; the
database: :mod:`common.db.leases`).

* :mod:`~conductor.leases.flows`: create, update, delete, and ``on_end``;
* :mod:`~conductor.leases.events`: the job that runs due events;
* :mod:`~conductor.leases.manager` / :mod:`~conductor.leases.rpcapi`: the
  ``leases`` RPC namespace on the conductor's topic;
* :mod:`~conductor.leases.periodic`: the job's thread;
* :mod:`~conductor.leases.service`: all of it wired into a conductor.

The scheduler honours reservations through
:func:`common.db.lease_hosts.placement`.
"""
