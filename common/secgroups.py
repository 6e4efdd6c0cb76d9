"""Security groups as far as Tristate can honestly offer them (issue 22).

Tristate filters no traffic: isolation between projects is the operator's
networks (docs/operator-guide.md, Networks). So there is exactly one
group, :data:`DEFAULT` (``default``), whose meaning is **all traffic
allowed**, and a port is either in it or in no group at all. A port in no
group means what it means for a Neutron port with port security and no
groups: **all traffic dropped**. Tristate makes that real on the
hypervisor by setting the guest's network card link down (libvirt's
``<link state='down'/>``): QEMU then drops every frame the card sends or
would receive, whatever the guest does, and the guest sees its link down.
(A libvirt nwfilter dropping everything would do the same on KVM, but it
needs the nwfilter driver and ebtables on every host and does not exist for
session libvirtds or libxl; the link state is part of the domain definition
itself, so it follows the domain through every rebuild, resize, migration
and restart with no agent state to re-apply.)

Every port of a server is in the same group (Nova's ``addSecurityGroup`` and
``removeSecurityGroup`` change all its ports). The group of each port is
stored in ``ports.security_group`` and travels in the ports a task carries
(``port['security_groups']``: ``['default']`` or ``[]``; a port without the
key, from an older conductor, is in ``default``).

A server with no port has no security groups at all (Nova with Neutron
shows none and answers 404 to adding or removing one), and a name other
than ``default`` is a group that does not exist (Nova's 404 on the actions;
a create naming it is refused with a 400 saying security groups are not
built yet: api/routes/networks.py).
"""

DEFAULT = 'default'
# The groups there are, by name.
GROUPS = (DEFAULT,)
# The link state of a card in each case (libvirt's ``<link state>``).
LINK_UP, LINK_DOWN = 'up', 'down'


def of_column(value):
    """A port's ``security_groups`` list from its stored column."""
    return [value] if value else []


def to_column(groups):
    """The stored column of a port's ``security_groups`` list."""
    groups = list(groups or ())
    if groups and groups != [DEFAULT]:
        raise ValueError('a port is in %r or in no group, not %r'
                         % (DEFAULT, groups))
    return groups[0] if groups else None


def link_state(port):
    """``'up'`` or ``'down'``: the link a port's card must have. A port
    without ``security_groups`` (an older conductor's) is in ``default``."""
    return LINK_UP if port.get('security_groups', [DEFAULT]) else LINK_DOWN


def with_groups(ports, groups):
    """``ports`` (as a task carries them) all in ``groups``."""
    return [dict(port, security_groups=list(groups)) for port in ports]
