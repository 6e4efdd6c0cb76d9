"""The tables, as SQLAlchemy 2 models. Alembic's migrations must agree (a test
compares them); change both in one commit.

Nothing outside :mod:`common.db.api` writes these tables: every state change
is one of its conditional UPDATEs.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import BigInteger
from sqlalchemy import Boolean
from sqlalchemy import DateTime
from sqlalchemy import Float
from sqlalchemy import ForeignKey
from sqlalchemy import Index
from sqlalchemy import Integer
from sqlalchemy import MetaData
from sqlalchemy import String
from sqlalchemy import Text
from sqlalchemy import UniqueConstraint
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.orm import Mapped
from sqlalchemy.orm import mapped_column

NAMING = {
    'ix': 'ix_%(table_name)s_%(column_0_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


_uuid = String(36)
_name = String(255)
_state = String(32)
# JSON; on PostgreSQL jsonb (json has no equality, which Alembic's
# comparison of server defaults needs).
JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


class Instance(Base):
    """One virtual machine and its three states (DESIGN.md section 1)."""
    __tablename__ = 'instances'

    uuid: Mapped[str] = mapped_column(_uuid, primary_key=True)
    name: Mapped[str] = mapped_column(_name)
    project_id: Mapped[str] = mapped_column(_name, index=True)
    user_id: Mapped[str] = mapped_column(_name)
    host: Mapped[str | None] = mapped_column(_name, index=True)

    flavor_name: Mapped[str] = mapped_column(_name)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    disk_gb: Mapped[int] = mapped_column(Integer)
    image_ref: Mapped[str] = mapped_column(_name)

    vm_state: Mapped[str] = mapped_column(_state, index=True)
    # Where RETURN rows (unrescue, confirm/revert resize) go back to.
    return_vm_state: Mapped[str | None] = mapped_column(_state)
    task_state: Mapped[str | None] = mapped_column(_state)
    task_id: Mapped[str | None] = mapped_column(_uuid, unique=True)
    task_action: Mapped[str | None] = mapped_column(_state)
    task_started_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    # Last claim or progress of the running task: the reaper's clock.
    task_updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    progress_step: Mapped[str | None] = mapped_column(_state)
    progress_percent: Mapped[int] = mapped_column(Integer, default=0)

    power_state: Mapped[int] = mapped_column(Integer, default=0)
    power_reason: Mapped[str | None] = mapped_column(String(16))
    # The agent's sequence of the last report stored: older ones are ignored.
    power_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    power_reported_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)

    user_shutdown_policy: Mapped[str] = mapped_column(String(16))
    crash_policy: Mapped[str] = mapped_column(String(16))

    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    launched_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    soft_deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    hard_deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)

    # What the user says of the server (issue 22), none of it a state:
    # Nova's description (2.19), user metadata (key -> value, the
    # ``metadata`` column), tags (2.26), the lock (2.9; who locked it,
    # ``owner`` or ``admin``, and why, 2.73) and the boot request's
    # reservation id (``r-...``) shared by the servers one request made.
    description: Mapped[str | None] = mapped_column(Text)
    user_metadata: Mapped[dict] = mapped_column(
        'metadata', JSON, default=dict, server_default='{}')
    tags: Mapped[list] = mapped_column(JSON, default=list,
                                       server_default='[]')
    locked: Mapped[bool] = mapped_column(Boolean, default=False,
                                         server_default=sa.false())
    locked_by: Mapped[str | None] = mapped_column(String(16))
    locked_reason: Mapped[str | None] = mapped_column(_name)
    boot_reservation_id: Mapped[str | None] = mapped_column(String(36),
                                                            index=True)
    launch_index: Mapped[int] = mapped_column(Integer, default=0,
                                              server_default='0')
    # The availability zone the boot request asked for (None: any), which
    # every build of the instance honours (Nova's request spec's zone,
    # shown as ``pinned_availability_zone`` from 2.96).
    availability_zone: Mapped[str | None] = mapped_column(_name)
    # The networks the create asked for (issue 23), resolved: [{"network_id":
    # ..., "fixed_ip": ... or null}], so that a buried build rebuilt
    # allocates the same ports again (common/db/networks.py).
    requested_networks: Mapped[list | None] = mapped_column(JSON)
    # Guest access (issue 24): the key pair named at create and its public
    # key as it was then (a key pair deleted later changes no server), the
    # user data (base64, as sent) and whether it gets a config drive.
    key_name: Mapped[str | None] = mapped_column(_name)
    key_data: Mapped[str | None] = mapped_column(Text)
    user_data: Mapped[str | None] = mapped_column(Text)
    config_drive: Mapped[bool] = mapped_column(Boolean, default=False,
                                               server_default=sa.false())
    # Nova's accessIPv4/accessIPv6: addresses the user sets and reads
    # back; nothing acts on them (as in Nova).
    access_ip_v4: Mapped[str | None] = mapped_column(String(39))
    access_ip_v6: Mapped[str | None] = mapped_column(String(39))
    # Nova's hostname given on create, update or rebuild (2.90; an FQDN
    # from 2.94): shown as OS-EXT-SRV-ATTR:hostname and written into the
    # config drive; None: derived from the name (common/hostnames.py).
    hostname: Mapped[str | None] = mapped_column(_name)
    # Nova's OS-DCF:diskConfig: True AUTO, False (or None: made before it
    # was kept) MANUAL. What each means on Tristate: the operator guide.
    auto_disk_config: Mapped[bool | None] = mapped_column(Boolean)
    # The guest's NUMA cells (common/numa.py), null for one cell; shelving:
    # when it was shelved (the offload sweep's clock) and the snapshot it
    # is unshelved from (migration 0019).
    numa_cells: Mapped[list | None] = mapped_column(JSON)
    shelved_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    shelved_image_id: Mapped[str | None] = mapped_column(String(36))
    # Nova's same_host / different_host scheduler hints of the create
    # ({"same_host": [uuid, ...], "different_host": [...]}), which every
    # build and move honours (common/db/host_hints.py); null: none given.
    scheduler_hints: Mapped[dict | None] = mapped_column(JSON)


class Host(Base):
    """A hypervisor host: what its agent reports and what is allocated on it."""
    __tablename__ = 'hosts'

    name: Mapped[str] = mapped_column(_name, primary_key=True)
    vcpus: Mapped[int] = mapped_column(Integer, default=0)
    memory_mb: Mapped[int] = mapped_column(Integer, default=0)
    disk_gb: Mapped[int] = mapped_column(Integer, default=0)
    # Sums of the allocations below, kept in the same transactions, so that
    # the scheduler allocates with one conditional UPDATE.
    used_vcpus: Mapped[int] = mapped_column(Integer, default=0)
    used_memory_mb: Mapped[int] = mapped_column(Integer, default=0)
    used_disk_gb: Mapped[int] = mapped_column(Integer, default=0)
    # The scheduler's weigher, stored so that an index orders the hosts:
    # ``memory_mb * ram_ratio - used_memory_mb``, set by every statement that
    # changes one of those (``tristate-manage check`` verifies it).
    # ``ram_ratio`` is the [scheduler] ram_allocation_ratio of the conductor
    # that recorded the last heartbeat (1 until one did).
    ram_ratio: Mapped[float] = mapped_column(Float, server_default='1')
    free_memory_mb: Mapped[float] = mapped_column(Float, server_default='0')
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(_name)
    # An admin declared the host down (Nova's forced_down): no build goes
    # there and it shows as down, whatever its heartbeats say.
    forced_down: Mapped[bool] = mapped_column(Boolean, default=False,
                                              server_default=sa.false())
    # The hypervisor's number (Nova's integer ids before 2.53), given when
    # the host registers: the largest so far plus one.
    number: Mapped[int | None] = mapped_column(Integer, unique=True)
    # In the leases' reservable pool (an admin put it there): only such a
    # host can be leased (common/db/lease_hosts.py).
    reservable: Mapped[bool] = mapped_column(Boolean, default=False,
                                             server_default=sa.false())
    # What the agent keeps for its host ([compute] reserved_host_cpus,
    # reserved_host_memory_mb, reserved_host_disk_mb in whole GiB rounded
    # up), as its last heartbeat said (issue 25). ``vcpus``, ``memory_mb``
    # and ``disk_gb`` above are already without it: what instances may
    # use, which the scheduler multiplies by the allocation ratios (Nova's
    # ``(total - reserved) x ratio``); os-hypervisors adds it back.
    reserved_vcpus: Mapped[int] = mapped_column(Integer, server_default='0')
    reserved_memory_mb: Mapped[int] = mapped_column(Integer,
                                                    server_default='0')
    reserved_disk_gb: Mapped[int] = mapped_column(Integer, server_default='0')
    # The agent's own [compute] cpu/ram/disk_allocation_ratio (None: the
    # scheduler's [scheduler] ones apply on this host).
    own_cpu_ratio: Mapped[float | None] = mapped_column(Float, nullable=True)
    own_ram_ratio: Mapped[float | None] = mapped_column(Float, nullable=True)
    own_disk_ratio: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_heartbeat: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    # When the agent process now reporting started: a change means a restart.
    agent_started_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)

    # The scheduler's two orders (spread: most free first; pack: least),
    # ties by name: reading the first hosts of one is reading the best.
    __table_args__ = (
        Index('ix_hosts_spread', 'ram_ratio', free_memory_mb.desc(), 'name'),
        Index('ix_hosts_pack', 'ram_ratio', 'free_memory_mb', 'name'),
    )


class Allocation(Base):
    """Resources one instance holds on one host (two during a resize)."""
    __tablename__ = 'allocations'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    host: Mapped[str] = mapped_column(_name, ForeignKey('hosts.name'),
                                      index=True)
    # 'instance': what the instance runs with; 'resize': the new flavor held
    # while a resize waits for confirm or revert.
    purpose: Mapped[str] = mapped_column(String(16), default='instance')
    flavor_name: Mapped[str | None] = mapped_column(_name)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    disk_gb: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class InstanceAction(Base):
    """The action log: one row per task, so "what happened to this VM" has
    an answer (DESIGN.md section 3, step 5)."""
    __tablename__ = 'instance_actions'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    task_id: Mapped[str] = mapped_column(_uuid, unique=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    action: Mapped[str] = mapped_column(_state)
    user_id: Mapped[str | None] = mapped_column(_name)
    project_id: Mapped[str | None] = mapped_column(_name)
    request_id: Mapped[str | None] = mapped_column(_name)
    started_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    finished_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    result: Mapped[str] = mapped_column(String(16), index=True)
    vm_state_before: Mapped[str | None] = mapped_column(_state)
    vm_state_after: Mapped[str | None] = mapped_column(_state)
    message: Mapped[str | None] = mapped_column(Text)
    # A failed task's fault code when it is the user's mistake (4xx);
    # NULL: the service's (500).
    fault_code: Mapped[int | None] = mapped_column(Integer)


# --- leases (DESIGN.md section 7; statuses and rules: common/leases.py) -------
# Written only by common/db/leases.py, every status change checked against
# the tables of common/leases.py and made by a conditional UPDATE.

class Lease(Base):
    """Whole hosts held for one project between start and end."""
    __tablename__ = 'leases'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    name: Mapped[str] = mapped_column(_name)
    project_id: Mapped[str] = mapped_column(_name, index=True)
    user_id: Mapped[str] = mapped_column(_name)
    start_date: Mapped[datetime.datetime] = mapped_column(DateTime)
    end_date: Mapped[datetime.datetime] = mapped_column(DateTime)
    # None: no before_end_lease event ([leases] before_end = 0).
    before_end_date: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    # What happens to the reservation's instances at the end: delete, stop.
    on_end: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(_state, index=True)
    # Why the last operation failed, or the lease is in ERROR.
    status_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class Reservation(Base):
    """What a lease holds: ``physical:host``, min to max matching hosts."""
    __tablename__ = 'reservations'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    lease_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('leases.id'), index=True)
    resource_type: Mapped[str] = mapped_column(_state)
    min_hosts: Mapped[int] = mapped_column(Integer)
    max_hosts: Mapped[int] = mapped_column(Integer)
    # Blazar's JSON query on host fields, e.g. [">=", "$memory_mb", "4096"];
    # empty: any host.
    hypervisor_properties: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(_state)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class ReservationHost(Base):
    """A host a reservation holds for its lease's window (Blazar's
    computehost_allocations). The scheduler keeps other requests off it
    while the reservation is active."""
    __tablename__ = 'reservation_hosts'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    reservation_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('reservations.id'), index=True)
    host: Mapped[str] = mapped_column(_name, ForeignKey('hosts.name'),
                                      index=True)


class ReservationInstance(Base):
    """An instance the scheduler placed on a reservation's hosts because
    it named the reservation: the lease's on_end applies to it."""
    __tablename__ = 'reservation_instances'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    reservation_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('reservations.id'), index=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class LeaseEvent(Base):
    """start_lease, before_end_lease, end_lease: run by one conductor when
    due (``run_id`` is that run's claim, like an instance's task_id)."""
    __tablename__ = 'lease_events'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    lease_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('leases.id'), index=True)
    event_type: Mapped[str] = mapped_column(_state)
    time: Mapped[datetime.datetime] = mapped_column(DateTime, index=True)
    status: Mapped[str] = mapped_column(_state, index=True)
    run_id: Mapped[str | None] = mapped_column(_uuid)
    # When the run in progress was claimed; None once it failed (retry).
    claimed_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- quotas, usage for billing, services (issue 10) ---------------------------
# Written only by common/db/quotas.py, common/db/usage.py and
# common/db/services.py, in the transactions of the state changes they follow.

class QuotaLimit(Base):
    """An admin's per-project override of a ``[quota]`` default."""
    __tablename__ = 'quota_limits'

    project_id: Mapped[str] = mapped_column(_name, primary_key=True)
    # instances, cores, ram, disk (common/db/quotas.py RESOURCES)
    resource: Mapped[str] = mapped_column(_state, primary_key=True)
    # -1: unlimited
    hard_limit: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class QuotaUsage(Base):
    """What a project's instances hold: the sums of their QuotaCharge rows,
    kept in the same transactions, so that a check is one conditional
    UPDATE (``WHERE used + asked <= limit``)."""
    __tablename__ = 'quota_usages'

    project_id: Mapped[str] = mapped_column(_name, primary_key=True)
    instances: Mapped[int] = mapped_column(Integer, default=0)
    cores: Mapped[int] = mapped_column(Integer, default=0)
    ram: Mapped[int] = mapped_column(Integer, default=0)
    disk: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class QuotaCharge(Base):
    """What one instance holds of its project's quota (none: no row)."""
    __tablename__ = 'quota_charges'

    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), primary_key=True)
    project_id: Mapped[str] = mapped_column(_name, index=True)
    instances: Mapped[int] = mapped_column(Integer, default=0)
    cores: Mapped[int] = mapped_column(Integer, default=0)
    ram: Mapped[int] = mapped_column(Integer, default=0)
    disk: Mapped[int] = mapped_column(Integer, default=0)


class UsageInterval(Base):
    """A billable interval of one instance on one flavor: opened when it
    becomes running-ish, closed (``ended_at``) when it stops being so."""
    __tablename__ = 'usage_intervals'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    project_id: Mapped[str] = mapped_column(_name, index=True)
    flavor_name: Mapped[str] = mapped_column(_name)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    disk_gb: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    # None while open
    ended_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Service(Base):
    """A conductor or compute agent and its last heartbeat, for
    ``tristate-manage status``."""
    __tablename__ = 'services'
    __table_args__ = (UniqueConstraint('binary', 'host'),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    binary: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(_name)
    # the package version the service runs (None: it did not say)
    version: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    last_seen: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- domains the instances table cannot place (issue 19) ----------------------
# Written only by common/db/domains.py.

class StrayDomain(Base):
    """A domain an agent reported on a host where its instance is not
    placed (a leftover of a move, a renamed host), or of a hard-deleted
    instance, or of no instance; and, ``doomed``, a host told to destroy
    its copy of an instance (the destination of a move that a delete or an
    admin reset preempted), reported or not yet. ``tristate-manage check``
    names every one reported; a full report of its host that no longer
    lists it removes it."""
    __tablename__ = 'stray_domains'

    host: Mapped[str] = mapped_column(_name, primary_key=True)
    # no foreign key: a domain no instance ever owned is recorded too
    instance_uuid: Mapped[str] = mapped_column(_uuid, primary_key=True)
    # None: not reported yet (a doomed mark only)
    power_state: Mapped[int | None] = mapped_column(Integer)
    power_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    reported_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    doomed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- images (issue 21) ----------------------------------------------------------
# Written only by common/db/images.py.

class Image(Base):
    """One image of the catalogue (Glance v2's record). ``location`` is the
    store's URI of its data, never shown to users; ``properties`` the
    user's extra string properties (Nova's snapshot ones among them);
    a deleted image keeps its row (status ``deleted``, ``deleted_at``)."""
    __tablename__ = 'images'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    name: Mapped[str | None] = mapped_column(_name)
    status: Mapped[str] = mapped_column(_state, index=True)
    visibility: Mapped[str] = mapped_column(_state)
    owner: Mapped[str | None] = mapped_column(_name, index=True)
    protected: Mapped[bool] = mapped_column(Boolean, default=False)
    os_hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    disk_format: Mapped[str | None] = mapped_column(_state)
    container_format: Mapped[str | None] = mapped_column(_state)
    size: Mapped[int | None] = mapped_column(BigInteger)
    virtual_size: Mapped[int | None] = mapped_column(BigInteger)
    checksum: Mapped[str | None] = mapped_column(String(32))
    os_hash_algo: Mapped[str | None] = mapped_column(String(64))
    os_hash_value: Mapped[str | None] = mapped_column(String(128))
    min_disk: Mapped[int] = mapped_column(Integer, default=0)
    min_ram: Mapped[int] = mapped_column(Integer, default=0)
    location: Mapped[str | None] = mapped_column(Text)
    properties: Mapped[dict] = mapped_column(sa.JSON)
    tags: Mapped[list] = mapped_column(sa.JSON)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class ImageMember(Base):
    """A project an image of visibility ``shared`` is shared with, and
    whether that project accepted it."""
    __tablename__ = 'image_members'

    image_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('images.id'), primary_key=True)
    member: Mapped[str] = mapped_column(_name, primary_key=True, index=True)
    status: Mapped[str] = mapped_column(_state)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class ServiceKey(Base):
    """A secret the services share through the database (the HMAC key of
    image grants), created by whoever needs it first."""
    __tablename__ = 'service_keys'

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret: Mapped[str] = mapped_column(_name)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- flavors and quota classes (issue 22) ---------------------------------------
# Written only by common/db/flavors.py and common/db/quota_classes.py.

class Flavor(Base):
    """A flavor of the catalogue (Nova's): ``flavorid`` is the id users
    see, ``name`` unique as well among the flavors not deleted. The
    configured ``[conductor] flavors`` are inserted once
    (:class:`FlavorSeed`); instances keep their sizes in their own row, so
    deleting a flavor changes no server."""
    __tablename__ = 'flavors'
    # unique among the flavors not deleted (a deleted one has deleted = id)
    __table_args__ = (UniqueConstraint('flavorid', 'deleted'),
                      UniqueConstraint('name', 'deleted'))

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    flavorid: Mapped[str] = mapped_column(_name)
    name: Mapped[str] = mapped_column(_name)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    disk_gb: Mapped[int] = mapped_column(Integer)
    swap: Mapped[int] = mapped_column(Integer, default=0)
    ephemeral_gb: Mapped[int] = mapped_column(Integer, default=0)
    rxtx_factor: Mapped[float] = mapped_column(Float, default=1.0)
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    # 0 while the flavor exists; its id once deleted (kept so that the
    # servers built with it still show its id)
    deleted: Mapped[int] = mapped_column(Integer, default=0,
                                         server_default='0')


class FlavorExtraSpec(Base):
    __tablename__ = 'flavor_extra_specs'

    flavor_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('flavors.id'), primary_key=True)
    key: Mapped[str] = mapped_column(_name, primary_key=True)
    value: Mapped[str] = mapped_column(_name)


class FlavorProject(Base):
    """A project that may use a private flavor (os-flavor-access)."""
    __tablename__ = 'flavor_projects'

    flavor_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('flavors.id'), primary_key=True)
    project_id: Mapped[str] = mapped_column(_name, primary_key=True)


class FlavorSeed(Base):
    """A configured flavor's id, once inserted: a flavor an admin deleted
    is not inserted again at the next start."""
    __tablename__ = 'flavor_seeds'

    flavorid: Mapped[str] = mapped_column(_name, primary_key=True)


class QuotaClassLimit(Base):
    """An admin's value of a quota class (``default``: the defaults every
    project without an override of its own gets, over ``[quota]``)."""
    __tablename__ = 'quota_class_limits'

    class_name: Mapped[str] = mapped_column(_name, primary_key=True)
    resource: Mapped[str] = mapped_column(String(64), primary_key=True)
    hard_limit: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- host aggregates and availability zones (issue 25) -----------------------
# Written only by common/db/aggregates.py. A host's zone is the
# ``availability_zone`` metadata of an aggregate it is in, else [DEFAULT]
# default_availability_zone.

class Aggregate(Base):
    """Nova's host aggregate: a named set of hosts with metadata."""
    __tablename__ = 'aggregates'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str] = mapped_column(_uuid, unique=True)
    name: Mapped[str] = mapped_column(_name, unique=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class AggregateHost(Base):
    __tablename__ = 'aggregate_hosts'

    aggregate_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('aggregates.id'), primary_key=True)
    host: Mapped[str] = mapped_column(_name, primary_key=True, index=True)


class AggregateMetadata(Base):
    __tablename__ = 'aggregate_metadata'
    # the scheduler's zone filter looks up (key, value) then the hosts
    __table_args__ = (Index('ix_aggregate_metadata_key_value', 'key',
                            'value'),)

    aggregate_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('aggregates.id'), primary_key=True)
    key: Mapped[str] = mapped_column(_name, primary_key=True)
    value: Mapped[str] = mapped_column(_name)


class Migration(Base):
    """A move of an instance (a resize, a live migration), recorded in
    the transaction that takes its destination's resources; its status is
    read from the action log rows of its task and of the confirm or
    revert that ends it (api/routes/migrations.py). An evacuation's
    ``cleaned_at``: when its source host, back, no longer had the domain
    (common/db/evacuations.py)."""
    __tablename__ = 'migrations'
    # a returning host looks up what was evacuated away from it
    __table_args__ = (Index('ix_migrations_source_host_type', 'source_host',
                            'migration_type'),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str] = mapped_column(_uuid, unique=True)
    task_id: Mapped[str] = mapped_column(_uuid, unique=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    # 'resize', 'live-migration' or 'evacuation' (Nova's migration_type)
    migration_type: Mapped[str] = mapped_column(String(32))
    source_host: Mapped[str | None] = mapped_column(_name)
    dest_host: Mapped[str | None] = mapped_column(_name)
    old_flavor_name: Mapped[str | None] = mapped_column(_name)
    new_flavor_name: Mapped[str | None] = mapped_column(_name)
    user_id: Mapped[str | None] = mapped_column(_name)
    project_id: Mapped[str | None] = mapped_column(_name)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    cleaned_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, nullable=True)


# --- networks, ports and fixed addresses (issue 23) ------------------------------
# Written only by common/db/networks.py.

class Network(Base):
    """A network an admin defined: where guests are plugged in (a Linux
    bridge on every hypervisor, or a libvirt network) and the addresses
    handed out on it. ``project_id`` None: shared by every project."""
    __tablename__ = 'networks'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    name: Mapped[str] = mapped_column(_name, unique=True)
    bridge: Mapped[str | None] = mapped_column(_name)
    libvirt_network: Mapped[str | None] = mapped_column(_name)
    cidr: Mapped[str] = mapped_column(String(64))
    gateway: Mapped[str | None] = mapped_column(String(64))
    dns: Mapped[list] = mapped_column(JSON, default=list, server_default='[]')
    allocation_start: Mapped[str] = mapped_column(String(64))
    allocation_end: Mapped[str] = mapped_column(String(64))
    ipv6_cidr: Mapped[str | None] = mapped_column(String(64))
    ipv6_gateway: Mapped[str | None] = mapped_column(String(64))
    mtu: Mapped[int | None] = mapped_column(Integer)
    project_id: Mapped[str | None] = mapped_column(_name, index=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Port(Base):
    """One network card of one instance: its MAC, unique everywhere by
    this table's constraint. ``position``: its order in the request."""
    __tablename__ = 'ports'

    id: Mapped[str] = mapped_column(_uuid, primary_key=True)
    instance_uuid: Mapped[str] = mapped_column(
        _uuid, ForeignKey('instances.uuid'), index=True)
    network_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('networks.id'), index=True)
    mac: Mapped[str] = mapped_column(String(17), unique=True)
    position: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    # ``default`` (all traffic allowed) or None: in no group, all traffic
    # dropped (the guest's link is down: common/secgroups.py)
    security_group: Mapped[str | None] = mapped_column(
        String(255), nullable=True, server_default='default')


class FixedIP(Base):
    """An address held by one port: unique per network by the primary
    key, so that no two ports ever hold it, whatever the concurrency."""
    __tablename__ = 'fixed_ips'

    network_id: Mapped[str] = mapped_column(
        _uuid, ForeignKey('networks.id'), primary_key=True)
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    port_id: Mapped[str] = mapped_column(_uuid, ForeignKey('ports.id'),
                                         index=True)
    version: Mapped[int] = mapped_column(Integer)
# --- key pairs (issue 24) ---------------------------------------------------------
# Written only by common/db/keypairs.py.

class KeyPair(Base):
    """A user's public key (Nova's ``os-keypairs``), unique by name per
    user. The private key of a generated pair is never stored."""
    __tablename__ = 'key_pairs'
    __table_args__ = (UniqueConstraint('user_id', 'name'),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    name: Mapped[str] = mapped_column(_name)
    user_id: Mapped[str] = mapped_column(_name)
    fingerprint: Mapped[str] = mapped_column(_name)
    public_key: Mapped[str] = mapped_column(Text)
    type: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


# --- console tokens (issue 24) ----------------------------------------------------

class ConsoleToken(Base):
    """A console URL's one-time token (issue 24): its digest, never the
    token; what it opens (an instance's serial console on a host's
    address and port); when it expires and when it was used."""
    __tablename__ = 'console_tokens'

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    instance_uuid: Mapped[str] = mapped_column(_uuid, index=True)
    project_id: Mapped[str] = mapped_column(_name)
    console_type: Mapped[str] = mapped_column(String(32))
    host: Mapped[str] = mapped_column(_name)
    address: Mapped[str] = mapped_column(_name)
    port: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
    expires_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          index=True)
    used_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, nullable=True)


# --- server groups (issue 25) -------------------------------------------------------
# Written only by common/db/server_groups.py.

class ServerGroup(Base):
    """Nova's server group: a policy (affinity, anti-affinity,
    soft-affinity, soft-anti-affinity) its members are placed by. Its row
    is also the lock a placement of a member takes (SELECT ... FOR UPDATE
    in the allocating transaction), so two members are never placed at
    once."""
    __tablename__ = 'server_groups'

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str] = mapped_column(_uuid, unique=True)
    name: Mapped[str] = mapped_column(_name)
    project_id: Mapped[str] = mapped_column(_name, index=True)
    user_id: Mapped[str] = mapped_column(_name)
    policy: Mapped[str] = mapped_column(String(32))
    # the anti-affinity rule of 2.64 (None: 1, or not anti-affinity)
    max_server_per_host: Mapped[int | None] = mapped_column(Integer,
                                                            nullable=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)


class ServerGroupMember(Base):
    """An instance in a group (at most one group each: Nova's ``group``
    scheduler hint names one). Removed by the instance's hard delete."""
    __tablename__ = 'server_group_members'

    instance_uuid: Mapped[str] = mapped_column(_uuid, primary_key=True)
    group_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('server_groups.id'), index=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime)
