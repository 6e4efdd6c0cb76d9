"""``tristate host list`` and ``tristate flavor list``."""

from cliff import lister

from api.cli import columns


class ListHosts(lister.Lister):
    """Hosts (admin): up/down, capacity, usage and instances by oper_state."""

    def take_action(self, parsed_args):
        hosts = self.app.client.get('/os-hypervisors/detail')['hypervisors']
        fields = ('Host', 'State', 'Status', 'vCPUs', 'RAM MiB', 'Disk GiB',
                  'Instances', 'Oper States', 'Last Heartbeat')
        rows = [(h['hypervisor_hostname'], h['state'], h['status'],
                 columns.Usage((h['vcpus_used'], h['vcpus'])),
                 columns.Usage((h['memory_mb_used'], h['memory_mb'])),
                 columns.Usage((h['local_gb_used'], h['local_gb'])),
                 h['running_vms'], columns.Counts(h['tristate:oper_states']),
                 h['tristate:last_heartbeat'])
                for h in hosts]
        return fields, rows


class ListFlavors(lister.Lister):
    """Flavors servers can be created with (the flavors API's)."""

    def take_action(self, parsed_args):
        flavors = self.app.client.get('/flavors/detail?sort_key=memory_mb')['flavors']
        fields = ('Name', 'vCPUs', 'RAM MiB', 'Disk GiB')
        return fields, [(f['name'], f['vcpus'], f['ram'], f['disk'])
                        for f in flavors]


def commands():
    return {'host list': ListHosts, 'flavor list': ListFlavors}
