"""``tristate host list`` and ``tristate flavor list``."""

from cliff import lister

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


def commands():
    return {'host list': ListHosts, 'flavor list': ListFlavors}
