"""The config drive (issue 24): an ISO 9660 image in OpenStack's
ConfigDrive-2 layout, which cloud-init and Glean read, built by the agent
for an instance whose build or rebuild task says ``config_drive``.

Made with ``pycdlib`` (no ``genisoimage``): volume label ``config-2``,
Joliet and Rock Ridge names (what Linux mounts show), plain 8.3 ISO names
underneath. The files, as Nova writes them::

    openstack/<version>/meta_data.json     uuid, name, hostname, public_keys,
                                           keys, meta (user metadata),
                                           launch_index, availability_zone,
                                           project_id, devices, random_seed,
                                           admin_pass (when the task carries
                                           one: never kept elsewhere)
    openstack/<version>/user_data          the user data, decoded (if any)
    openstack/<version>/network_data.json  links/networks/services of
                                           params['ports'] (from 2015-10-15)
    openstack/<version>/vendor_data.json   {} (from 2013-10-17)
    openstack/<version>/vendor_data2.json  {} (from 2016-10-06)
    ec2/<version>/meta-data.json           EC2's keys
    ec2/<version>/user-data                the user data (if any)

for each dated version Nova writes and ``latest``. The image is kept per
instance under ``<state_dir>/agent/config-drives/<host>/<uuid>.iso``,
given to the driver's ``spawn``/``rebuild`` (``config_drive=PATH``),
written again on rebuild, and removed with the domain (:func:`remove`).
"""

import base64
import io
import ipaddress
import json
import logging
import os

import pycdlib

LOG = logging.getLogger(__name__)

LABEL = 'config-2'
OPENSTACK_VERSIONS = ('2012-08-10', '2013-04-04', '2013-10-17',
                      '2015-10-15', '2016-06-30', '2016-10-06',
                      '2017-02-22', '2018-08-27', '2020-10-14', 'latest')
EC2_VERSIONS = ('2009-04-04', 'latest')
NETWORK_DATA_SINCE = '2015-10-15'
VENDOR_DATA_SINCE = '2013-10-17'
VENDOR_DATA2_SINCE = '2016-10-06'
RANDOM_SEED_BYTES = 512


def _since(version, first):
    return version == 'latest' or version >= first


def path(conf, host, uuid):
    """Where the agent of ``host`` keeps ``uuid``'s config drive."""
    return os.path.join(conf.state_dir, 'agent', 'config-drives', host,
                        '%s.iso' % uuid)


def sweep(conf, host, keep, cutoff):
    """Remove the drives (and partial writes) of ``host`` whose uuid is
    not in ``keep`` and last written before ``cutoff`` (a time.time());
    their uuids (:mod:`compute_agent.leftovers`)."""
    folder = os.path.dirname(path(conf, host, 'any'))
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    removed = []
    for name in names:
        uuid = name.split('.', 1)[0]
        if uuid in keep or not name.endswith(('.iso', '.iso.part')):
            continue
        full = os.path.join(folder, name)
        try:
            if os.path.getmtime(full) >= cutoff:
                continue
            os.unlink(full)
        except FileNotFoundError:
            continue
        removed.append(uuid)
    return removed


def remove(conf, host, uuid):
    """Remove ``uuid``'s config drive, if it has one (idempotent)."""
    try:
        os.unlink(path(conf, host, uuid))
    except FileNotFoundError:
        return
    LOG.info('Removed the config drive of %s', uuid)


# --- carried to another host (issue 25) -------------------------------------------

# A config drive is small (user data is at most 64 KiB); a move refuses one
# larger than this rather than put it in one RPC message.
CARRY_MAX = 16 * 1024 * 1024


def carried(conf, host, uuid):
    """``uuid``'s config drive as a move carries it (base64 text), or
    None when it has none. The very bytes the guest has seen: a live
    guest may have it mounted, so it is never rebuilt (a new build would
    differ in its random seed and dates, and lack the admin password,
    which is never kept)."""
    try:
        with open(path(conf, host, uuid), 'rb') as f:
            data = f.read(CARRY_MAX + 1)
    except FileNotFoundError:
        return None
    if len(data) > CARRY_MAX:
        raise ValueError('the config drive of %s is larger than %d bytes'
                         % (uuid, CARRY_MAX))
    return base64.b64encode(data).decode('ascii')


def place(conf, host, uuid, data):
    """Write ``data`` (what :func:`carried` returned on the other host)
    as ``uuid``'s config drive here; its path."""
    target = path(conf, host, uuid)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = target + '.part'
    with open(partial, 'wb') as f:
        f.write(base64.b64decode(data.encode('ascii'), validate=True))
    os.replace(partial, target)
    LOG.info('Placed the config drive of %s, carried from its source, at %s',
             uuid, target)
    return target


# --- what the files say -----------------------------------------------------------

def meta_data(inst, params):
    """``openstack/*/meta_data.json`` of the instance."""
    meta = params.get('config_drive_meta') or {}
    keys = {}
    if params.get('key_name') and params.get('key_data'):
        keys[params['key_name']] = params['key_data']
    found = {
        'uuid': inst['uuid'], 'name': inst['name'],
        'hostname': meta.get('hostname') or inst['name'],
        'launch_index': meta.get('launch_index', 0),
        'availability_zone': meta.get('availability_zone', 'nova'),
        'project_id': inst.get('project_id'),
        'meta': dict(meta.get('metadata') or {}),
        'public_keys': keys,
        'keys': [{'name': name, 'type': 'ssh', 'data': data}
                 for name, data in keys.items()],
        'devices': [],
        'random_seed': base64.b64encode(
            os.urandom(RANDOM_SEED_BYTES)).decode(),
    }
    if params.get('admin_pass'):
        found['admin_pass'] = params['admin_pass']
    return found


def _ip_network(port, fixed, index):
    net = port.get('network') or {}
    version = fixed.get('version', 4)
    cidr = net.get('cidr') if version == 4 else net.get('ipv6_cidr')
    gateway = net.get('gateway') if version == 4 else net.get(
        'ipv6_gateway')
    entry = {'id': 'network%d' % index, 'type': 'ipv%d' % version,
             'link': _link_id(port), 'ip_address': fixed['address'],
             'network_id': net.get('id'), 'routes': []}
    if cidr:
        entry['netmask'] = str(ipaddress.ip_network(cidr,
                                                    strict=False).netmask)
    if gateway:
        default = '0.0.0.0' if version == 4 else '::'
        entry['routes'].append({'network': default, 'netmask': default,
                                'gateway': gateway})
    if version == 4 and net.get('dns'):
        entry['services'] = [{'type': 'dns', 'address': d}
                             for d in net['dns']]
    return entry


def _link_id(port):
    return 'tap%s' % str(port['id'])[:11]


def network_data(ports):
    """``openstack/*/network_data.json`` of ``params['ports']`` (the
    networking issue's shape): empty lists when there are none."""
    links, networks, dns = [], [], []
    for port in ports or ():
        net = port.get('network') or {}
        links.append({'id': _link_id(port), 'vif_id': port['id'],
                      'type': 'phy', 'ethernet_mac_address': port['mac'],
                      'mtu': net.get('mtu')})
        for fixed in port.get('fixed_ips') or ():
            networks.append(_ip_network(port, fixed, len(networks)))
        dns += [d for d in net.get('dns') or () if d not in dns]
    return {'links': links, 'networks': networks,
            'services': [{'type': 'dns', 'address': d} for d in dns]}


def ec2_meta_data(inst, params):
    """``ec2/*/meta-data.json``: EC2's instance metadata keys."""
    meta = params.get('config_drive_meta') or {}
    hostname = meta.get('hostname') or inst['name']
    ipv4 = [f['address'] for p in params.get('ports') or ()
            for f in p.get('fixed_ips') or () if f.get('version', 4) == 4]
    data = {
        'ami-id': inst.get('image_ref'),
        'ami-launch-index': meta.get('launch_index', 0),
        'block-device-mapping': {'ami': 'vda', 'root': '/dev/vda'},
        'hostname': hostname, 'local-hostname': hostname,
        'public-hostname': hostname,
        'instance-action': 'none',
        'instance-id': 'i-%s' % inst['uuid'].replace('-', '')[:8],
        'instance-type': inst.get('flavor_name'),
        'local-ipv4': ipv4[0] if ipv4 else None,
        'public-ipv4': None,
        'placement': {'availability-zone': meta.get('availability_zone',
                                                    'nova')},
        'reservation-id': None,
        'security-groups': ['default'],
    }
    if params.get('key_data'):
        data['public-keys'] = {'0': {'openssh-key': params['key_data']}}
    return data


def files(inst, params):
    """{path on the drive: bytes} of the whole ConfigDrive-2 tree."""
    user_data = (base64.b64decode(params['user_data'])
                 if params.get('user_data') else None)

    def js(value):
        return json.dumps(value, sort_keys=True).encode()
    meta = js(meta_data(inst, params))
    found = {}
    for version in OPENSTACK_VERSIONS:
        top = 'openstack/%s/' % version
        found[top + 'meta_data.json'] = meta
        if user_data is not None:
            found[top + 'user_data'] = user_data
        if _since(version, NETWORK_DATA_SINCE):
            found[top + 'network_data.json'] = js(
                network_data(params.get('ports')))
        if _since(version, VENDOR_DATA_SINCE):
            found[top + 'vendor_data.json'] = js({})
        if _since(version, VENDOR_DATA2_SINCE):
            found[top + 'vendor_data2.json'] = js({})
    ec2 = js(ec2_meta_data(inst, params))
    for version in EC2_VERSIONS:
        found['ec2/%s/meta-data.json' % version] = ec2
        if user_data is not None:
            found['ec2/%s/user-data' % version] = user_data
    return found


# --- the image ------------------------------------------------------------------

class _Names:
    """Short ISO 9660 names (``D0001``, ``F0001.;1``) for every directory
    and file; the real names are their Rock Ridge and Joliet names."""

    def __init__(self):
        self.dirs = {'': '/'}
        self.count = 0

    def next(self):
        self.count += 1
        return '%05d' % self.count

    def directory(self, iso, rel):
        if rel in self.dirs:
            return self.dirs[rel]
        parent_rel, _, name = rel.rpartition('/')
        parent = self.directory(iso, parent_rel)
        iso_path = parent.rstrip('/') + '/D' + self.next()
        iso.add_directory(iso_path, rr_name=name, joliet_path='/' + rel)
        self.dirs[rel] = iso_path
        return iso_path


def build_iso(tree, target):
    """Write ``tree`` ({path: bytes}) as a ConfigDrive-2 ISO at ``target``
    (replacing it atomically)."""
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge='1.09', vol_ident=LABEL)
    names = _Names()
    for rel in sorted(tree):
        data = tree[rel]
        parent_rel, _, name = rel.rpartition('/')
        parent = names.directory(iso, parent_rel)
        iso.add_fp(io.BytesIO(data), len(data),
                   parent.rstrip('/') + '/F' + names.next() + '.;1',
                   rr_name=name, joliet_path='/' + rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = target + '.part'
    try:
        iso.write(partial)
        os.replace(partial, target)
    finally:
        iso.close()
        if os.path.exists(partial):
            os.unlink(partial)


def make(conf, host, inst, params):
    """The config drive of ``inst`` if its task asks for one (its path),
    else None (and an old drive is removed when the task says it has
    none; a task from a conductor that predates config drives says
    nothing)."""
    if not params.get('config_drive'):
        if 'config_drive' in params:
            remove(conf, host, inst['uuid'])
        return None
    target = path(conf, host, inst['uuid'])
    build_iso(files(inst, params), target)
    LOG.info('Wrote the config drive of %s at %s', inst['uuid'], target)
    return target
