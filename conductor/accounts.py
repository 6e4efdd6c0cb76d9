"""Quota sets and usage reports, for the API tier: who may see and change
what (a project reads its own; an admin reads and changes any), and the
conversions the bus needs (times as ISO 8601 strings)."""

import datetime

from common import exception


def _own_or_admin(ctx, project_id, what):
    if not ctx.is_admin and ctx.project_id != project_id:
        raise exception.Forbidden(action='%s of project %s (admin or that '
                                         'project only)' % (what, project_id))


def get_quotas(statedb, ctx, project_id):
    _own_or_admin(ctx, project_id, 'reading the quotas')
    return statedb.get_quotas(project_id)


def update_quotas(statedb, ctx, project_id, values):
    if not ctx.is_admin:
        raise exception.Forbidden(action='changing quotas (admin only)')
    return statedb.set_quotas(project_id, values)


def _time(value, name):
    try:
        return datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise exception.Invalid(reason='%s must be an ISO 8601 time, not %r'
                                % (name, value)) from None


def _plain(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def tenant_usage(statedb, ctx, *, start, end, project_id=None):
    """{project_id: usage}; every project's for an admin when
    ``project_id`` is None."""
    return tenant_usage_page(statedb, ctx, start=start, end=end,
                             project_id=project_id)['usages']


def tenant_usage_page(statedb, ctx, *, start, end, project_id=None,
                      marker=None, limit=None):
    """``{'usages': {project_id: usage}, 'more': bool, 'last': uuid}``
    of one page of instances (``marker``: the last instance of the page
    before; ``limit``: instances per page); ``more``: instances are left
    after the page, whose last instance is ``last``."""
    if project_id is None:
        if not ctx.is_admin:
            raise exception.Forbidden(action='usage of every project (admin '
                                             'only)')
    else:
        _own_or_admin(ctx, project_id, 'usage')
    begin, stop = _time(start, 'start'), _time(end, 'end')
    if begin > stop:
        raise exception.Invalid(reason='start %s is after end %s'
                                % (start, end))
    page = statedb.tenant_usage_page(
        start=begin, end=stop, project_id=project_id, marker=marker,
        limit=limit)
    return {'more': page['more'], 'last': page['last'], 'usages': {
        project: dict(_plain(body), server_usages=[
            _plain(s) for s in body['server_usages'].values()])
        for project, body in page['usage'].items()}}
