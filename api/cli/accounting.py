"""``tristate quota show|set`` and ``tristate usage show|list``.

    tristate quota show [--project P] [--usage | --default]
    tristate quota set --project P --instances 20 --cores 40
    tristate usage show [--project P] [--start T] [--end T]
    tristate usage list [--start T] [--end T]       # admin: every project

Nova's ``/os-quota-sets`` and ``/os-simple-tenant-usage``. The project is
``--project``, else the one the credentials are scoped to (Keystone's, or
noauth's ``USER:PROJECT`` token). ``usage list`` follows the API's
``tenant_usages_links`` page by page (``marker``), and stops with an error
if the API answers the same page twice (an API that ignores ``marker``
would otherwise be asked forever).
"""

import datetime
from urllib import parse

from cliff import lister
from cliff import show

from api.cli import client as client_mod

# The limits of a quota set, in the API's order (common.db.LIMITS;
# not imported: the command line needs no database code).
LIMITS = ('instances', 'cores', 'ram', 'disk', 'lease_hosts', 'lease_hours')

USAGE_FIELDS = ('Project', 'Servers', 'RAM MiB-Hours', 'CPU Hours',
                'Disk GiB-Hours')


def project_of(app, parsed_args):
    """``--project``, else the project the credentials name."""
    if parsed_args.project:
        return parsed_args.project
    project = app.project_id()
    if project:
        return project
    raise client_mod.ApiError(
        'Which project? Give --project: these credentials name none (with '
        'noauth, a USER:PROJECT token names it; with no token the API uses '
        'its [api] noauth_default_project).')


def _add_project(parser):
    parser.add_argument('--project', metavar='PROJECT_ID',
                        help='Project ID (default: your credentials\' '
                             'project).')


class ShowQuota(show.ShowOne):
    """A project's limits (-1: unlimited); with --usage, what it uses."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_project(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument('--usage', action='store_true',
                           help='Also what the project uses (in_use).')
        which.add_argument('--default', action='store_true',
                           help='The defaults, not the project\'s.')
        return parser

    def take_action(self, parsed_args):
        project = project_of(self.app, parsed_args)
        suffix = ('/detail' if parsed_args.usage else
                  '/defaults' if parsed_args.default else '')
        found = self.app.client.get('/os-quota-sets/%s%s'
                                    % (parse.quote(project), suffix))
        body = found['quota_set']
        keys = [k for k in LIMITS if k in body]
        keys += sorted(k for k in body if k not in keys and k != 'id')
        if parsed_args.usage:
            values = ['%s/%s' % (body[k]['in_use'], body[k]['limit'])
                      for k in keys]
        else:
            values = [body[k] for k in keys]
        return ('project', *keys), (body.get('id', project), *values)


class SetQuota(show.ShowOne):
    """Set a project's limits (admin); -1 is unlimited."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='PROJECT_ID', required=True,
                            help='Project ID.')
        for name in LIMITS:
            parser.add_argument('--%s' % name.replace('_', '-'), type=int,
                                dest=name, metavar='N',
                                help='New limit of %s.' % name)
        return parser

    def take_action(self, parsed_args):
        values = {k: getattr(parsed_args, k) for k in LIMITS
                  if getattr(parsed_args, k) is not None}
        if not values:
            raise client_mod.ApiError('Nothing to set: give at least one of '
                                      '%s.' % ', '.join(
                                          '--%s' % k.replace('_', '-')
                                          for k in LIMITS))
        project = parse.quote(parsed_args.project)
        body = self.app.client.put('/os-quota-sets/%s' % project,
                                   {'quota_set': values})['quota_set']
        keys = [k for k in LIMITS if k in body]
        return ('project', *keys), (parsed_args.project,
                                    *(body[k] for k in keys))


def _add_period(parser):
    parser.add_argument('--start', metavar='YYYY-MM-DDTHH:MM:SS',
                        help='Start (UTC). Default: four weeks ago, as '
                             'openstackclient.')
    parser.add_argument('--end', metavar='YYYY-MM-DDTHH:MM:SS',
                        help='End (UTC). Default: now.')


def _period(parsed_args):
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    start = parsed_args.start or (now - datetime.timedelta(weeks=4)).strftime(
        '%Y-%m-%dT%H:%M:%S')
    end = parsed_args.end or now.strftime('%Y-%m-%dT%H:%M:%S')
    return {'start': start, 'end': end}


def _row(usage, project=None):
    return (usage.get('tenant_id', project),
            len(usage.get('server_usages') or ()),
            round(usage.get('total_memory_mb_usage') or 0, 2),
            round(usage.get('total_vcpus_usage') or 0, 2),
            round(usage.get('total_local_gb_usage') or 0, 2))


class ShowUsage(show.ShowOne):
    """One project's billable usage between --start and --end."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_project(parser)
        _add_period(parser)
        return parser

    def take_action(self, parsed_args):
        project = project_of(self.app, parsed_args)
        merged = _pages(self.app.client, '/os-simple-tenant-usage/%s'
                        % parse.quote(project), _period(parsed_args),
                        'tenant_usage')
        usage = merged.get(project) or next(iter(merged.values()), {})
        return USAGE_FIELDS, _row(usage, project)


def _pages(client, path, params, key):
    """{project: usage} of every page of ``path`` (Nova pages the usage by
    server from 2.40, one project's too: its parts are added up)."""
    merged, marker = {}, None
    while True:
        found = client.get(path, **params)
        page = found.get(key) or []
        if isinstance(page, dict):          # one project's usage
            page = [page] if page else []
        for usage in page:
            _merge(merged, usage)
        following = client_mod.next_marker(found.get(key + '_links'))
        if not following or not page:
            return merged
        if following == marker:
            raise client_mod.ApiError(
                'The API answered the page after %s twice (it ignores '
                '"marker"): stopped after %d project(s).'
                % (marker, len(merged)))
        marker = params['marker'] = following


def usage_pages(client, params):
    """Every project's usage, following the API's pages (Nova pages by
    server from 2.40: a project may span pages; its parts are added up)."""
    return list(_pages(client, '/os-simple-tenant-usage',
                       dict(params, detailed='1'), 'tenant_usages').values())


_TOTALS = ('total_memory_mb_usage', 'total_vcpus_usage',
           'total_local_gb_usage', 'total_hours')


def _merge(merged, usage):
    project = usage.get('tenant_id')
    if project not in merged:
        merged[project] = dict(usage, server_usages=list(
            usage.get('server_usages') or ()))
        return
    into = merged[project]
    for key in _TOTALS:
        into[key] = (into.get(key) or 0) + (usage.get(key) or 0)
    into['server_usages'].extend(usage.get('server_usages') or ())


class ListUsage(lister.Lister):
    """Every project's billable usage between --start and --end (admin)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _add_period(parser)
        return parser

    def take_action(self, parsed_args):
        usages = usage_pages(self.app.client, _period(parsed_args))
        return USAGE_FIELDS, [_row(u) for u in usages]


def commands():
    return {'quota show': ShowQuota, 'quota set': SetQuota,
            'usage show': ShowUsage, 'usage list': ListUsage}
