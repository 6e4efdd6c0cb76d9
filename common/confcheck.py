"""What a daemon checks in its configuration before it starts anything,
beyond what oslo.config's types check (:func:`common.service.
config_problems` gathers it all, one line per problem, and refuses to
start on any):

* values oslo.config reads as plain strings but Tristate parses itself:
  ``[conductor] flavors`` (a malformed entry was accepted, and then every
  ``GET /flavors`` and create answered 400) and ``task_timeouts``;
* optional Python packages the configuration needs (``psycopg2`` for a
  PostgreSQL URL, ``libvirt`` for the libvirt driver, keystonemiddleware for
  ``auth_strategy = keystone``): one line naming the package to install,
  not a traceback at the first use;

and, only warned about (an operator's typo must not stop a daemon, but
must not go unnoticed either), options and sections of the config files
that no daemon reads: those of :data:`common.conf.opts.NAMESPACES` (the
sample config's) and whatever the process registered.
"""

import difflib
import importlib
import importlib.util
import os
import re

from oslo_config import cfg
import stevedore

from common import flavors as flavors_mod
from common.conf import opts as conf_opts

# module -> (pip package, Tristate extra that pulls it in)
PACKAGES = {'psycopg2': ('psycopg2-binary', 'postgresql'),
            'libvirt': ('libvirt-python', 'libvirt'),
            'keystonemiddleware': ('keystonemiddleware', 'keystone'),
            'psycopg': ('psycopg[binary]', None),
            'pymysql': ('PyMySQL', None),
            'MySQLdb': ('mysqlclient', None)}


# --- values ------------------------------------------------------------------

def value_problems(conf):
    """``[conductor] flavors`` and ``task_timeouts``, one line per bad entry."""
    try:
        group = conf.conductor
        entries, timeouts = group.flavors, group.task_timeouts
    except (cfg.Error, ValueError, AttributeError):
        return []       # not registered, or reported by its type's own check
    problems = ['[conductor] flavors: %s' % p
                for p in flavors_mod.problems(entries)]
    problems.extend('[conductor] task_timeouts: %s' % p
                    for p in _timeout_problems(timeouts))
    return problems + _version_problems(conf)


def _version_problems(conf):
    """``[upgrade_levels]``: a version N.N, as oslo.messaging compares."""
    try:
        caps = {'conductor': conf.upgrade_levels.conductor,
                'compute': conf.upgrade_levels.compute}
    except (cfg.Error, AttributeError):
        return []
    return ['[upgrade_levels] %s: %r is not an RPC API version; expected '
            'MAJOR.MINOR, e.g. 1.0' % (name, value)
            for name, value in caps.items()
            if value and not re.fullmatch(r'\d+\.\d+', value)]


def _timeout_problems(timeouts):
    from common.actions import TABLE
    for action, seconds in sorted(timeouts.items()):
        if action not in TABLE.actions:
            yield ('%r is not an action; expected one of %s'
                   % (action, ', '.join(sorted(TABLE.actions))))
        elif not seconds.isdigit() or int(seconds) < 1:
            yield ('%s:%s: expected whole seconds >= 1' % (action, seconds))


# --- optional packages -------------------------------------------------------

def _missing(module):
    """The module (or the one it needs) that cannot be imported, or None."""
    try:
        importlib.import_module(module)
    except ImportError as err:
        return err.name or module
    return None


def _install_line(module):
    package, extra = PACKAGES.get(module, (module, None))
    how = 'pip install %s' % package
    if extra:
        how += ' (or tristate[%s])' % extra
    return 'the Python module %s, which is not installed: %s' % (module, how)


def database_problems(conf):
    """The DB-API module of ``[database] connection`` cannot be imported."""
    import sqlalchemy as sa
    url = conf.database.connection
    if not url:
        return []       # SQLite under state_dir: in the standard library
    try:
        dialect = sa.engine.make_url(url).get_dialect()
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as err:
        return ['[database] connection: not a database URL SQLAlchemy '
                'knows: %s' % err]
    try:
        dialect.import_dbapi()
    except ImportError as err:
        module = err.name or str(err)
        return ['[database] connection: %s needs %s' % (
            dialect.name + '+' + dialect.driver, _install_line(module))]
    return []


def libvirt_problems(conf):
    if conf.compute.driver != 'libvirt' or not _missing('libvirt'):
        return []
    return ['[compute] driver: libvirt needs %s (it builds against '
            'libvirt\'s headers: apt-get install libvirt-dev pkg-config)'
            % _install_line('libvirt')]


def keystone_problems(conf):
    if conf.api.auth_strategy != 'keystone':
        return []
    missing = _missing('keystonemiddleware.auth_token')
    if not missing:
        return []
    return ['[api] auth_strategy: keystone needs %s' % _install_line(
        missing.split('.')[0])]


REQUIRES = {'database': database_problems, 'libvirt': libvirt_problems,
            'keystone': keystone_problems}


def dependency_problems(conf, requires):
    """Problems of the checks named in ``requires`` (keys of REQUIRES)."""
    problems = []
    for name in requires:
        problems.extend(REQUIRES[name](conf))
    return problems


# --- unknown options ----------------------------------------------------------

def known_options(conf, namespaces=conf_opts.NAMESPACES):
    """{section: names} of every option a daemon may read: the sample
    config's namespaces (with deprecated names) and what ``conf`` has."""
    known = {}

    def add(group, opt):
        section = _section(group)
        known.setdefault(section, set()).update((opt.dest, opt.name))
        for old in opt.deprecated_opts:
            known.setdefault(_section(old.group or section), set()).add(
                old.name)
    manager = stevedore.named.NamedExtensionManager(
        'oslo.config.opts', names=list(namespaces), invoke_on_load=True)
    for extension in manager:
        for group, group_opts in extension.obj:
            for opt in group_opts:
                add(group, opt)
    for key in conf:
        value = getattr(conf, key, None)
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            known.setdefault(key, set()).update(value)
        else:
            known.setdefault('DEFAULT', set()).add(key)
    return known


def _section(group):
    if group is None:
        return 'DEFAULT'
    return getattr(group, 'name', group)


def _files(conf):
    files = list(conf.config_file or [])
    for directory in conf.config_dir and [conf.config_dir] or []:
        if os.path.isdir(directory):
            files.extend(sorted(
                os.path.join(directory, name) for name in os.listdir(directory)
                if name.endswith('.conf')))
    return files


def unknown_options(conf, known=None):
    """``[section] name: ...`` lines for each option and section of the
    config files that nothing reads, with a close known name if any."""
    known = known_options(conf) if known is None else known
    lines = []
    for path in _files(conf):
        sections = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue        # oslo.config reported it already
        for section, values in sections.items():
            lines.extend(_unknown_in(known, section, values, path))
    return lines


def _unknown_in(known, section, values, path):
    if section not in known:
        hint = _hint(section, known)
        yield ('[%s]: unknown section in %s, ignored%s'
               % (section, path, hint))
        return
    for name in values:
        if name not in known[section]:
            yield ('[%s] %s: unknown option in %s, ignored%s'
                   % (section, name, path, _hint(name, known[section])))


def _hint(name, choices):
    close = difflib.get_close_matches(name, list(choices), n=1)
    return ' (did you mean %s?)' % close[0] if close else ''
