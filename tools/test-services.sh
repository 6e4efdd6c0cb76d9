#!/usr/bin/env bash
# Starts (or stops) the throwaway servers the test suite needs, bound to
# 127.0.0.1 and owned by this script, never by systemd:
#   tools/test-services.sh start DIR   -> prints `export ...` lines to eval
#   tools/test-services.sh stop DIR
# PostgreSQL: a fresh cluster in DIR/pg (initdb + pg_ctl as user postgres).
set -euo pipefail

cmd=${1:?usage: $0 start|stop DIR}
dir=${2:?usage: $0 start|stop DIR}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
pg_port=${TRISTATE_TEST_PG_PORT:-54329}

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

start_pg() {
    [ -n "$pg_bin" ] || { echo "PostgreSQL server binaries not found" >&2; exit 1; }
    mkdir -p "$dir/pg"
    chown postgres:postgres "$dir/pg"
    chmod 700 "$dir/pg"
    as_postgres "$pg_bin/initdb" -D "$dir/pg/data" -A trust -U postgres >"$dir/pg/initdb.log"
    as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 60 \
        -o "-h 127.0.0.1 -p $pg_port -k $dir/pg -c fsync=off -c max_connections=200" start >/dev/null
    echo "export TRISTATE_TEST_PG_URL=postgresql+psycopg2://postgres@127.0.0.1:$pg_port/postgres"
}

stop_pg() {
    [ -d "$dir/pg/data" ] || return 0
    as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null || true
}

case "$cmd" in
    start) start_pg ;;
    stop) stop_pg ;;
    *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
