"""Every error Tristate raises on purpose: one flat hierarchy.

Each class has a message template filled from keyword arguments, a ``code``
(the HTTP status the API tier answers with) and keeps its keyword arguments
in ``kwargs`` so that it can cross the RPC bus and be rebuilt on the other
side (see :func:`to_dict` and :func:`from_dict`).
"""


class TristateError(Exception):
    """Base class. ``msg_fmt`` is filled with the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                # A template and its arguments that disagree is our bug; still
                # tell the caller everything we know rather than crash here.
                message = '%s %r' % (self.msg_fmt, kwargs)
        self.message = message
        super().__init__(message)

    def to_dict(self):
        # Across RPC the class is a generated subclass ("X_Remote"): name
        # the first class of ours it derives from.
        name = next(c.__name__ for c in type(self).__mro__
                    if c.__name__ in _REGISTRY)
        return {'class': name, 'message': self.message,
                'kwargs': _plain(self.kwargs)}


def _plain(kwargs):
    out = {}
    for key, value in kwargs.items():
        if isinstance(value, (frozenset, set)):
            out[key] = sorted(value)
        elif isinstance(value, tuple):
            out[key] = list(value)
        else:
            out[key] = value
    return out


def from_dict(data):
    """Rebuild an error sent by :meth:`TristateError.to_dict`."""
    cls = _REGISTRY.get(data.get('class'), TristateError)
    err = cls(data.get('message'), **data.get('kwargs', {}))
    return err


class Invalid(TristateError):
    msg_fmt = 'Invalid input: %(reason)s'
    code = 400


class InvalidState(Invalid):
    msg_fmt = ('Invalid %(field)s %(value)r: expected one of %(expected)s')


class InvalidPowerState(Invalid, ValueError):
    msg_fmt = ('Unknown power_state %(value)r: expected one of %(expected)s')


class NotFound(TristateError):
    msg_fmt = 'Resource could not be found.'
    code = 404


class InstanceNotFound(NotFound):
    msg_fmt = 'Instance %(instance)s could not be found.'


class HostNotFound(NotFound):
    msg_fmt = 'Host %(host)s could not be found.'


class ActionNotFound(NotFound):
    msg_fmt = ('Unknown action %(action)r: expected one of %(expected)s')


class Gone(TristateError):
    """What Nova removed (its 410)."""
    msg_fmt = 'This resource is no longer available: %(reason)s'
    code = 410


class Forbidden(TristateError):
    msg_fmt = 'Policy does not allow %(action)s.'
    code = 403


class QuotaExceeded(TristateError):
    """A project's quota has no room: names the resource, the limit, what
    the project uses and what the request asked for."""

    msg_fmt = ('Quota exceeded for %(resource)s: requested %(requested)s, but '
               'already used %(used)s of %(limit)s %(resource)s (project '
               '%(project)s).')
    code = 403


class Conflict(TristateError):
    code = 409


class ActionNotAllowed(Conflict):
    """The action table denies the action: says why, in full."""

    msg_fmt = ('Cannot %(action)s instance %(instance)s: its vm_state is '
               '%(vm_state)s%(running)s; %(action)s needs %(needs)s.')

    def __init__(self, message=None, *, action, instance, vm_state,
                 allowed, task_state=None, task_id=None, **extra):
        extra.pop('running', None)   # derived below; present when rebuilt
        extra.pop('needs', None)     # from a dict that crossed the bus
        if task_id:
            running = (' and task %s (task_id %s) is running'
                       % (task_state, task_id))
            needs = ('no task running and vm_state in %s'
                     % ', '.join(sorted(allowed)) if allowed
                     else 'no task running')
        else:
            running = ''
            needs = ('vm_state in %s' % ', '.join(sorted(allowed))
                     if allowed else 'a vm_state it can never start from')
        super().__init__(message, action=action, instance=instance,
                         vm_state=vm_state, allowed=sorted(allowed),
                         task_state=task_state, task_id=task_id,
                         running=running, needs=needs, **extra)


class InstanceLocked(Conflict):
    """Nova's answer to a non-admin's change of a locked server."""

    msg_fmt = 'Instance %(instance)s is locked'


class TaskPreempted(Conflict):
    msg_fmt = ('Task %(task_id)s on instance %(instance)s was preempted: '
               '%(reason)s.')


class NoValidHost(TristateError):
    msg_fmt = 'No valid host was found: %(reason)s'
    code = 409


class NetworkNotFound(NotFound):
    msg_fmt = 'Network %(network)s could not be found.'


class NetworkInUse(Conflict):
    msg_fmt = ('Network %(network)s is in use: %(ports)s ports of servers '
               'are on it; delete those servers first.')


class NetworkAmbiguous(Conflict):
    msg_fmt = ('Multiple possible networks found (%(networks)s), use a '
               'Network ID to be more specific.')


class FixedIpInUse(Invalid):
    msg_fmt = ('Fixed IP address %(address)s is already in use on network '
               '%(network)s.')


class NoFreeAddress(Conflict):
    """A network has no address left for a new port: the build is buried
    with this message."""
    msg_fmt = 'no free address on network %(network)s'


class HostCapacityExceeded(Conflict):
    msg_fmt = ('Host %(host)s is disabled, held by a lease, or has no room '
               'for %(vcpus)s vCPUs, %(memory_mb)s MiB RAM and %(disk_gb)s '
               'GiB disk.')


class HostFull(Conflict):
    msg_fmt = ('Instance %(instance)s cannot be counted on its host %(host)s: '
               'the host has no room for its %(vcpus)s vCPUs, %(memory_mb)s '
               'MiB RAM and %(disk_gb)s GiB disk, and whatever runs on a host '
               'must be counted there. Free room on %(host)s first, or reset '
               'the instance to error.')


class LeaseNotFound(NotFound):
    msg_fmt = 'Lease %(lease)s could not be found.'


class LeaseActionNotAllowed(Conflict):
    """The lease tables (common/leases.py) deny the change: says why."""

    msg_fmt = 'Cannot %(action)s lease %(lease)s: %(reason)s.'


class NotEnoughHosts(Conflict):
    msg_fmt = 'Not enough hosts for lease %(lease)s: %(reason)s.'


class LeaseEventPreempted(Conflict):
    msg_fmt = ('The %(event_type)s run of lease %(lease)s was preempted: '
               '%(reason)s.')


class LeaseInstancesNotStopped(Conflict):
    msg_fmt = ('Lease %(lease)s ends with on_end=stop, but %(count)d '
               'instance(s) could not be stopped yet: %(reasons)s.')


class ImageNotFound(NotFound):
    msg_fmt = 'No image found with ID %(image)s'


class ImageMemberNotFound(NotFound):
    msg_fmt = '%(member)s not found in the member list of the image %(image)s.'


class DBUnavailable(TristateError):
    msg_fmt = ('The database is unavailable after %(attempts)d attempts over '
               '%(seconds).1f s: %(reason)s')
    code = 503


class ServiceUnavailable(TristateError):
    msg_fmt = 'Service unavailable: %(reason)s'
    code = 503


# --- server groups (common/db/server_groups.py; here to cross RPC) ----------

class ServerGroupNotFound(NotFound):
    msg_fmt = 'Instance group %(group)s could not be found.'


class ServerGroupQuota(QuotaExceeded):
    msg_fmt = ('Quota exceeded, too many server groups: project '
               '%(project)s has %(count)d, the limit (server_groups) is '
               '%(limit)d.')


class ServerGroupMembersQuota(QuotaExceeded):
    msg_fmt = ('Quota exceeded, too many servers in group %(group)s: it '
               'has %(count)d, the limit (server_group_members) is '
               '%(limit)d.')


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


_REGISTRY = {cls.__name__: cls for cls in _all_subclasses(TristateError)}
_REGISTRY['TristateError'] = TristateError
