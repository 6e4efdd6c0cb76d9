"""``orphan_action = destroy`` destroyed the guests of a renamed host.

Found reading the reconcile code for issue 19 (item 7):
``Results._is_orphan`` counted "the instance is placed on another host" as
an orphan, so an agent whose host name no longer matched its instances'
(a host renamed, its instances still recorded under the old name) had every
one of its running guests destroyed by the orphan policy, although each
belonged to a live instance.

Fixed: only a domain no live instance owns is an orphan. A domain of a live
instance placed elsewhere is recorded (``stray_domains``) for
``tristate-manage check``, which names the mismatch; it is never destroyed
by the orphan policy (only where a preempted move doomed it).
"""

import sqlalchemy as sa

from common.db import checks
from common.db import models
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for

I = models.Instance.__table__          # noqa: E741


def test_a_renamed_hosts_guests_are_not_orphans(conf, make_plane, ctx):
    set_opts(conf, 'reconcile', orphan_action='destroy', orphan_grace=0)
    plane = make_plane(hosts=1)
    inst = active(plane, ctx)
    uuid = inst['uuid']
    # The host was known as "oldname" when the instance was placed.
    plane.statedb.db.transaction(lambda conn: conn.execute(
        sa.update(I).where(I.c.uuid == uuid).values(host='oldname')))
    reporter = plane.agents['host1'].reporter
    sent = reporter.full_reports_sent

    for _ in range(2):      # seen once, then acted on (grace 0)
        assert reporter.full_report()
    wait_for(lambda: reporter.full_reports_sent >= sent + 2,
             what='two full reports of host1')

    assert domain(plane, 'host1', uuid) is not None
    found, _seen = checks.find_violations(plane.statedb.db, checks.Limits())
    assert any('instance %s: is placed on host oldname but host host1 '
               'reported its domain RUNNING' % uuid in str(v) for v in found), (
        found)
