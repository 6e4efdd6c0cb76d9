"""Quota classes (Nova's ``os-quota-class-sets``): an admin's values of a
named set of limits. The ``default`` class's values replace the ``[quota]``
defaults for every project without an override of its own
(:func:`common.db.quotas.limits`); other classes are stored and shown, as
Nova does, and apply to nobody.

Besides the limits Tristate enforces (:data:`common.db.quotas.LIMITS`), a
class and a project's quota set hold Nova's other limits (:data:`NOVA_ONLY`).
``metadata_items`` is enforced (per server: the project's value, else the
default class's, else ``[quota] metadata_items``), and ``key_pairs`` (per
user, the same way from ``[quota] key_pairs``). The others count things
Tristate does not have (fixed and floating IPs, security groups and rules,
server groups, injected files: personality is refused on create): a limit
on something nobody can make holds trivially, so they are stored and shown
back, as Nova does, and nothing is accepted that a limit would have to stop.
"""

import sqlalchemy as sa

from common.db import models
from common.db import quotas

Q = models.QuotaClassLimit.__table__
DEFAULT = 'default'

# Nova's default values of the limits it has and Tristate does not enforce.
NOVA_ONLY = {'metadata_items': 128, 'injected_files': 5,
             'injected_file_content_bytes': 10240,
             'injected_file_path_bytes': 255, 'key_pairs': 100,
             'server_groups': 10, 'server_group_members': 10,
             'fixed_ips': -1, 'floating_ips': 10, 'security_groups': 10,
             'security_group_rules': 20}
RESOURCES = quotas.LIMITS + tuple(NOVA_ONLY)


def stored(conn, class_name):
    """{resource: limit} an admin set in the class."""
    return {r.resource: r.hard_limit for r in conn.execute(
        sa.select(Q.c.resource, Q.c.hard_limit).where(
            Q.c.class_name == class_name))}


def values(conn, class_name, settings):
    """Every resource's limit in the class: stored, else the default."""
    found = dict(settings.defaults, **NOVA_ONLY)
    found['metadata_items'] = settings.metadata_items
    found['key_pairs'] = settings.key_pairs
    found.update(stored(conn, class_name))
    return found


def project_values(conn, project_id, settings):
    """Every resource's limit for a project: its overrides over the
    default class's."""
    found = values(conn, DEFAULT, settings)
    found.update(quotas.limits(conn, project_id, settings))
    return found


def store(conn, class_name, limits, now):
    for resource, limit in limits.items():
        done = conn.execute(sa.update(Q).where(
            Q.c.class_name == class_name, Q.c.resource == resource).values(
                hard_limit=limit, updated_at=now))
        if not done.rowcount:
            quotas.insert_new(conn, Q, class_name=class_name,
                              resource=resource, hard_limit=limit,
                              updated_at=now)
