"""Statements compiled once per dialect and run through the driver.

The state changes on the hot paths (a build, a task's end, a hard delete, a
power report) are a dozen keyed reads and writes each. Built anew each time,
a SQLAlchemy Core statement costs 300-1,000 µs of CPU on a small machine
(expressions, cache key, parameter and result set-up); SQLite does the same
keyed write in 10-30 µs. So these statements are built once, at import,
with every varying value a bound parameter (:func:`bind`), and
:class:`Prepared` compiles each one once per dialect into its SQL text, the
order of its parameters with their type processors, and its result columns
with theirs. Running it hands the text and the processed values to the
driver's cursor, on the connection (and in the transaction) SQLAlchemy
holds. SQLAlchemy's result set-up is skipped too: for a row of the
instances table it alone costs ~200 µs. A driver error is wrapped as
SQLAlchemy wraps its own (a ``DBAPIError``, the connection invalidated when
it was lost), so :mod:`common.db.engine`'s retry treats both alike.

A statement that needs a Python-side column default, or an expanding ``IN``,
cannot be prepared: :class:`Prepared` refuses it when it is compiled, and
such statements stay plain Core (:func:`cached` keeps one per shape for the
statements whose shape varies), or bind a list one value per slot
(:mod:`common.db.power` pads its lists of uuids to a few fixed sizes).
"""

import threading

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql import sqltypes

PREFIX = 'b_'


def bind(name, type_=None):
    """A bound value named apart from every column (``b_`` + ``name``);
    :meth:`Prepared.run` takes it as ``name``."""
    return sa.bindparam(PREFIX + name, type_=type_)


class Outcome:
    """What a prepared statement returned: ``rowcount`` and its rows (as
    dicts keyed by column name, values processed as SQLAlchemy would)."""

    __slots__ = ('rowcount', 'rows')

    def __init__(self, rowcount, rows):
        self.rowcount = rowcount
        self.rows = rows

    def first(self):
        return self.rows[0] if self.rows else None

    def scalar(self):
        """The first column of the first row, or None."""
        return next(iter(self.rows[0].values())) if self.rows else None


class _Form:
    """One statement compiled for one dialect."""

    __slots__ = ('sql', 'positional', 'slots', 'keys', 'types', 'dialect',
                 'readers')

    def __init__(self, stmt, dialect):
        compiled = stmt.compile(dialect=dialect)
        if compiled.insert_prefetch or compiled.update_prefetch:
            raise ValueError('cannot prepare %s: it needs Python-side column '
                             'defaults; bind those columns' % stmt)
        if compiled.literal_execute_params or compiled.post_compile_params:
            raise ValueError('cannot prepare %s: it has an expanding IN or a '
                             'literal-execute parameter' % stmt)
        self.sql = compiled.string
        self.positional = compiled.positional
        names = (compiled.positiontup if compiled.positional
                 else list(dict.fromkeys(compiled.bind_names.values())))
        self.slots = [self._slot(compiled.binds[name], name, dialect)
                      for name in names]
        columns = self._columns(stmt, compiled)
        self.keys = tuple(col.key for col in columns)
        if len(set(self.keys)) != len(self.keys):
            raise ValueError('cannot prepare %s: two result columns share a '
                             'name' % stmt)
        self.types = tuple(col.type.dialect_impl(dialect) for col in columns)
        self.dialect = dialect
        self.readers = None         # known from the first result's types

    @staticmethod
    def _slot(param, name, dialect):
        """(compiled name, caller's name or None, fixed value, processor)."""
        process = param.type.dialect_impl(dialect).bind_processor(dialect)
        if not param.required:
            return name, None, param.effective_value, process
        if not param.key.startswith(PREFIX):
            raise ValueError('bound parameter %r has no value; name it with '
                             'bind()' % param.key)
        if isinstance(param.type, sqltypes.NullType):
            raise ValueError('bound parameter %r has no type: give bind() '
                             'one, or compare it with a column' % param.key)
        return name, param.key[len(PREFIX):], None, process

    @staticmethod
    def _columns(stmt, compiled):
        if isinstance(stmt, sa.Select):
            return list(stmt.selected_columns)
        return list(getattr(compiled, 'effective_returning', None) or ())

    def params(self, given):
        values = []
        for _, key, fixed, process in self.slots:
            value = fixed if key is None else given[key]
            values.append(value if process is None else process(value))
        if self.positional:
            return tuple(values)
        return {slot[0]: value for slot, value in zip(self.slots, values, strict=True)}

    def _readers(self, description):
        """Each column's result processor; the driver's type codes (which
        PostgreSQL's numeric types need) are the same at every run."""
        return tuple(impl.result_processor(self.dialect, column[1])
                     for impl, column in zip(self.types, description,
                                             strict=True))

    def rows(self, cursor):
        if not self.keys:
            return []
        readers = self.readers
        if readers is None:
            readers = self.readers = self._readers(cursor.description)
        keys = self.keys
        if not any(readers):        # values as the driver gives them
            return [dict(zip(keys, raw, strict=True))
                    for raw in cursor.fetchall()]
        out = []
        for raw in cursor.fetchall():
            out.append({key: (value if read is None else read(value))
                        for key, read, value in zip(keys, readers, raw, strict=True)})
        return out


class Prepared:
    """A Core statement whose varying values are :func:`bind` parameters,
    compiled on first use with each dialect."""

    def __init__(self, stmt):
        self.stmt = stmt
        self._forms = {}

    def _form(self, dialect):
        key = (type(dialect), dialect.paramstyle,
               getattr(dialect, 'server_version_info', None))
        form = self._forms.get(key)
        if form is None:
            form = self._forms[key] = _Form(self.stmt, dialect)
        return form

    def run(self, conn, **params):
        """Execute with ``params`` (the names given to :func:`bind`) in
        ``conn``'s transaction."""
        form = self._form(conn.dialect)
        try:
            values = form.params(params)
        except KeyError as err:
            raise TypeError('%s needs a value for %s' % (
                self.stmt, err.args[0])) from None
        dbapi_conn = conn.connection.dbapi_connection
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(form.sql, values)
            rows = form.rows(cursor)
            return Outcome(cursor.rowcount, rows)
        except conn.dialect.loaded_dbapi.Error as err:
            raise wrapped(conn, dbapi_conn, cursor, form.sql, values,
                           err) from err
        finally:
            cursor.close()

    def one(self, conn, **params):
        """The first row as a dict, or None."""
        return self.run(conn, **params).first()

    def run_with(self, conn, values):
        """:meth:`run` with ``values`` keyed by the full bound names
        (``b_`` + name), as Core's ``execute`` takes them."""
        return self.run(conn, **{key[len(PREFIX):]: value
                                 for key, value in values.items()})


class Plain:
    """:class:`Prepared`'s interface over a statement built for one use
    (one that carries its own values, or an expanding ``IN``): run by
    SQLAlchemy Core."""

    def __init__(self, stmt):
        self.stmt = stmt

    def run_with(self, conn, values):
        result = conn.execute(self.stmt, values)
        rows = ([dict(r._mapping) for r in result] if result.returns_rows
                else [])
        return Outcome(result.rowcount, rows)


# SQLSTATE read_only_sql_transaction: the session is on a server that only
# reads (a hot standby, or a primary being demoted).
READ_ONLY = '25006'


def read_only(err):
    """True if the driver's error ``err`` says the server only reads. Its
    session is no more use than a lost one: during a failover it is on the
    old side (a standby not yet promoted, reached through a proxy or an
    address that moves), and only a new connection can find the server
    that takes writes."""
    return getattr(err, 'pgcode', None) == READ_ONLY


def wrapped(conn, dbapi_conn, cursor, sql, values, err):
    """``err`` as SQLAlchemy raises a driver's error: a ``DBAPIError``
    subclass, with the connection invalidated if the error means it is
    gone (or on a server that only reads: :func:`read_only`). As
    SQLAlchemy does on a disconnect, every connection the pool
    made before it is recycled at its next checkout too: a server that
    went away took them all, and a retry must not meet them one by one."""
    lost = (conn.dialect.is_disconnect(err, dbapi_conn, cursor)
            or read_only(err))
    if lost:
        conn.engine.pool._invalidate(conn.connection, err)
        conn.invalidate(err)
    return sa_exc.DBAPIError.instance(
        sql, values, err, conn.dialect.loaded_dbapi.Error,
        connection_invalidated=lost, dialect=conn.dialect)


_CACHE = {}
_CACHE_LOCK = threading.Lock()


def cached(key, build):
    """The :class:`Prepared` kept under ``key``, made by ``build()`` the
    first time: for statements whose shape varies with a few choices
    (which columns a task's end sets, which limits a quota check guards).
    ``key`` must take a bounded number of values."""
    found = _CACHE.get(key)
    if found is None:
        with _CACHE_LOCK:
            found = _CACHE.get(key)
            if found is None:
                found = _CACHE[key] = Prepared(build())
    return found
