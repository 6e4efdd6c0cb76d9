"""The StateDB's quota, usage and service methods (mixed into
:class:`common.db.api.StateDB`): the transactions the API and
``tristate-manage`` read and the admin's quota changes. The changes that
follow an instance's state are made in that state change's transaction
(:meth:`AccountingMixin._accounted`)."""

import sqlalchemy as sa

from common import exception
from common.db import lease_hosts
from common.db import quota_classes
from common.db import quotas
from common.db import services
from common.db import usage


class AccountingMixin:
    """Needs ``self.db``, ``self.clock`` and ``self.quota`` (a
    :class:`common.db.quotas.Settings`)."""

    quota = quotas.Settings()

    # --- in the transactions of state changes --------------------------------

    def _accounted(self, conn, after, now, *, check=False, extra=None,
                   new=False):
        """Quota and billing follow ``after``, the instance as just written.
        ``new``: inserted in this very transaction, so it holds no charge
        and has no usage interval yet (nothing to read)."""
        if not quotas.counts(after, self.quota):
            if not new:
                quotas.release(conn, after, now)
        else:
            held = dict(quotas.NOTHING) if new else quotas.held_by(
                conn, after['uuid'])
            want = quotas.wanted(after, self.quota, held=held, extra=extra)
            quotas.charge(conn, after, want, settings=self.quota, now=now,
                          check=check, held=held)
        if not new or after['vm_state'] in usage.BILLABLE:
            usage.track(conn, after, now)

    # --- quota sets -------------------------------------------------------------

    def get_quotas(self, project_id):
        """{"defaults", "limits", "usage"}: each {resource: number}."""
        def txn(conn):
            return {'defaults': quota_classes.values(
                        conn, quota_classes.DEFAULT, self.quota),
                    'limits': quota_classes.project_values(
                        conn, project_id, self.quota),
                    'usage': dict(quotas.usage(conn, project_id),
                                  **lease_hosts.quota_usage(conn,
                                                            project_id))}
        return self.db.transaction(txn, readonly=True)

    def set_quotas(self, project_id, values):
        """Override the project's limits (whole numbers >= -1)."""
        for resource, limit in values.items():
            if resource not in quota_classes.RESOURCES:
                raise exception.Invalid(
                    reason='unknown quota %r: expected %s' % (
                        resource, ', '.join(quota_classes.RESOURCES)))
            if (not isinstance(limit, int) or isinstance(limit, bool)
                    or limit < quotas.UNLIMITED):
                raise exception.Invalid(
                    reason='quota %s must be a whole number >= -1 (-1: '
                           'unlimited), not %r' % (resource, limit))

        def txn(conn):
            quotas.set_limits(conn, project_id, values, self.clock())
        self.db.transaction(txn)
        return self.get_quotas(project_id)

    def delete_quotas(self, project_id):
        """Drop the project's overrides: its limits are the defaults
        again (Nova's DELETE os-quota-sets)."""
        self.db.transaction(lambda conn: conn.execute(sa.delete(
            quotas.L).where(quotas.L.c.project_id == project_id)))

    def metadata_items(self, project_id, settings=None):
        """The user metadata items one server of the project may have;
        ``settings``: the [quota] options (default: this StateDB's)."""
        return self.project_limit(project_id, 'metadata_items', settings)

    def project_limit(self, project_id, resource, settings=None):
        """The project's limit of one resource: its quota set's, else the
        default class's, else ``settings`` (default: this StateDB's)."""
        settings = settings or self.quota
        return self.db.transaction(lambda conn: quota_classes.project_values(
            conn, project_id, settings)[resource], readonly=True)

    def get_quota_class(self, class_name, settings=None):
        """{resource: limit} of the quota class (Nova's resources too);
        ``settings``: the [quota] options (default: this StateDB's)."""
        settings = settings or self.quota
        return self.db.transaction(
            lambda conn: quota_classes.values(conn, class_name, settings),
            readonly=True)

    def set_quota_class(self, class_name, values, settings=None):
        """Store the class's ``values`` (whole numbers >= -1)."""
        def txn(conn):
            quota_classes.store(conn, class_name, values, self.clock())
        self.db.transaction(txn)
        return self.get_quota_class(class_name, settings)

    # --- usage for billing --------------------------------------------------------

    def tenant_usage(self, *, start, end, project_id=None):
        """{project_id: Nova's tenant usage} between ``start`` and ``end``."""
        return self.tenant_usage_page(start=start, end=end,
                                      project_id=project_id)['usage']

    def tenant_usage_page(self, *, start, end, project_id=None, marker=None,
                          limit=None):
        """``{'usage', 'more', 'last'}``: :meth:`tenant_usage` of one
        page of instances (:func:`common.db.usage.page`, Nova's paging
        from 2.40); ``more``: instances are left after it, ``last``: its
        last instance."""
        def txn(conn):
            rows = usage.intervals(conn, start=start, end=end,
                                   project_id=project_id)
            rows, more, last = usage.page(rows, marker=marker, limit=limit)
            found = usage.report(rows, start=start, end=end,
                                 now=self.clock())
            # Projects in the order of their last instance: the page's
            # last instance is the last project's last server, the marker
            # novaclient takes for the next page.
            ends = usage.last_positions(rows)
            return {'usage': {p: found[p] for p in sorted(found,
                                                          key=ends.get)},
                    'more': more, 'last': last}
        return self.db.transaction(txn, readonly=True)

    # --- services -------------------------------------------------------------------

    def service_heartbeat(self, *, binary, host, version, started_at=None):
        def txn(conn):
            services.beat(conn, binary=binary, host=host, version=version,
                          started_at=started_at, now=self.clock())
        self.db.transaction(txn)

    def list_services(self):
        return self.db.transaction(services.list_all, readonly=True)

    def delete_service(self, binary, host):
        """Forget a service's row (a running one writes it again at its
        next heartbeat)."""
        def txn(conn):
            conn.execute(services.S.delete().where(
                services.S.c.binary == binary, services.S.c.host == host))
        self.db.transaction(txn)
