"""``tristate host list``, ``tristate hypervisor list|show`` and
``tristate flavor list``."""

from cliff import lister
from cliff import show

from api.cli import client as client_mod

from api.cli import columns


class ListHosts(lister.Lister):
    """Hosts (admin): up/down, capacity, usage and instances by oper_state."""

    def take_action(self, parsed_args):
        hosts = self.app.client.get('/os-hypervisors/detail')['hypervisors']
        fields = ('Host', 'State', 'Status', 'vCPUs', 'RAM MiB', 'Disk GiB',
                  'Instances', 'Oper States', 'Last Heartbeat')
        # from 2.88 (Nova) the capacity is in tristate:capacity (2.101)
        caps = [h.get('tristate:capacity', h) for h in hosts]
        rows = [(h['hypervisor_hostname'], h['state'], h['status'],
                 columns.Usage((c['vcpus_used'], c['vcpus'])),
                 columns.Usage((c['memory_mb_used'], c['memory_mb'])),
                 columns.Usage((c['local_gb_used'], c['local_gb'])),
                 c['running_vms'], columns.Counts(h['tristate:oper_states']),
                 h['tristate:last_heartbeat'])
                for h, c in zip(hosts, caps, strict=True)]
        return fields, rows


class ListFlavors(lister.Lister):
    """Flavors servers can be created with (the flavors API's)."""

    def take_action(self, parsed_args):
        flavors = self.app.client.get('/flavors/detail?sort_key=memory_mb')['flavors']
        fields = ('Name', 'vCPUs', 'RAM MiB', 'Disk GiB')
        return fields, [(f['name'], f['vcpus'], f['ram'], f['disk'])
                        for f in flavors]


HYPERVISOR_FIELDS = ('ID', 'Hypervisor Hostname', 'Hypervisor Type',
                     'State', 'Status')


def _hypervisors(client):
    return client.get('/os-hypervisors/detail')['hypervisors']


class ListHypervisors(lister.Lister):
    """Hypervisors (admin), with openstackclient's columns."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--long', action='store_true',
                            help='Also vCPUs, RAM and disk, used/total.')
        return parser

    def take_action(self, parsed_args):
        fields = HYPERVISOR_FIELDS
        if parsed_args.long:
            fields += ('vCPUs', 'RAM MiB', 'Disk GiB', 'Instances')
        rows = []
        for h in _hypervisors(self.app.client):
            row = (h['id'], h['hypervisor_hostname'], h['hypervisor_type'],
                   h['state'], h['status'])
            if parsed_args.long:
                # from 2.88 (Nova) the capacity is in tristate:capacity
                c = h.get('tristate:capacity', h)
                row += (columns.Usage((c['vcpus_used'], c['vcpus'])),
                        columns.Usage((c['memory_mb_used'], c['memory_mb'])),
                        columns.Usage((c['local_gb_used'], c['local_gb'])),
                        c['running_vms'])
            rows.append(row)
        return fields, rows


class ShowHypervisor(show.ShowOne):
    """One hypervisor (admin), by ID or host name: every field."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hypervisor', help='Hypervisor ID or host name.')
        return parser

    def take_action(self, parsed_args):
        wanted = parsed_args.hypervisor
        found = [h for h in _hypervisors(self.app.client)
                 if wanted in (str(h['id']), h['hypervisor_hostname'])]
        if not found:
            raise client_mod.ApiError('No hypervisor with an ID or host name '
                                      'of %r exists.' % wanted, status=404)
        body = found[0]
        keys = sorted(k for k in body if k != 'service')
        values = [body[k] for k in keys]
        if isinstance(body.get('service'), dict):
            keys.append('service_host')
            values.append(body['service'].get('host'))
        return tuple(keys), tuple(values)


def commands():
    return {'host list': ListHosts, 'flavor list': ListFlavors,
            'hypervisor list': ListHypervisors,
            'hypervisor show': ShowHypervisor}
