#!/usr/bin/env bash
# Starts (or stops) the throwaway servers the test suite needs, bound to
# 127.0.0.1 and owned by this script, never by systemd:
#   tools/test-services.sh start DIR   -> prints `export ...` lines to eval
#   tools/test-services.sh stop DIR
#   tools/test-services.sh rabbit DIR start|stop|kill
#       the RabbitMQ node alone (the broker-restart tests use it; epmd stays)
#   tools/test-services.sh rabbit DIR ctl ARGS...
#       rabbitmqctl ARGS against that node (e.g. a test's own users)
#   tools/test-services.sh libvirtd DIR start|stop|kill
#       a private libvirtd of its own (see below; the libvirtd-restart test)
#   tools/test-services.sh pg DIR start|stop|kill
#       the PostgreSQL server alone (stop: -m fast, kill: -m immediate)
#   tools/test-services.sh cluster DIR start|stop
#   tools/test-services.sh cluster DIR node I start|stop|kill | ctl I ARGS...
#       a three-node RabbitMQ cluster of its own (see "a three-node
#       RabbitMQ cluster" below; tests/integration/test_faults_cluster.py)
#   tools/test-services.sh pgpair DIR start PRIMARY_PORT STANDBY_PORT | stop
#   tools/test-services.sh pgpair DIR primary|standby stop|kill | promote
#       a PostgreSQL primary and a streaming standby of its own (see "a
#       primary and its streaming standby" below; test_faults_pg_failover.py)
# PostgreSQL: a fresh cluster in DIR/pg (initdb + pg_ctl as user postgres).
# RabbitMQ: a private node in DIR/rabbit (its own epmd port, Erlang cookie,
# mnesia, logs, config and no plugins), run as user rabbitmq, stopped by PID.
# Besides plain AMQP (user guest) it has an AMQPS listener with a throwaway
# CA and server certificate (DIR/rabbit/tls) and one user per service
# (tristate-conductor, tristate-compute, tristate-api) with the permissions
# docs/operator-guide.md recommends, for tests/integration/test_rabbitmq_tls.py.
# libvirt (best effort): libvirtd and virtlogd started as daemons if none
# runs, for the real-hypervisor smoke tests (QEMU with TCG: no /dev/kvm
# needed); if libvirtd cannot start here, a warning says so and those tests
# skip with the reason.
set -euo pipefail

usage="usage: $0 start|stop DIR | $0 rabbit|pg|libvirtd DIR start|stop|kill | $0 rabbit DIR ctl ARGS...
       $0 libvirtd DIR start [BRIDGE_HELPER]
       $0 cluster DIR start|stop | node I start|stop|kill | ctl I ARGS...
       $0 pgpair DIR start PRIMARY_PORT STANDBY_PORT | stop
       $0 pgpair DIR primary|standby stop|kill | promote"
cmd=${1:?$usage}
dir=${2:?$usage}
case "$cmd/${3:-}" in start/*|cluster/start|pgpair/start) mkdir -p "$dir" ;; esac
[ -d "$dir" ] || { case "$cmd/${3:-}" in stop/*|cluster/stop|pgpair/stop) exit 0 ;; esac; echo "no directory $dir" >&2; exit 1; }
dir=$(cd "$dir" && pwd)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
pg_port=${TRISTATE_TEST_PG_PORT:-54329}

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

start_pg() {
    [ -n "$pg_bin" ] || { echo "PostgreSQL server binaries not found" >&2; exit 1; }
    mkdir -p "$dir/pg"
    chown postgres:postgres "$dir/pg"
    chmod 700 "$dir/pg"
    as_postgres "$pg_bin/initdb" -D "$dir/pg/data" -A trust -U postgres >"$dir/pg/initdb.log"
    echo "$pg_port" >"$dir/pg/port"
    pg_server start
    echo "export TRISTATE_TEST_PG_URL=postgresql+psycopg2://postgres@127.0.0.1:$pg_port/postgres"
    # The outage test runs: $TRISTATE_TEST_PG_CTL stop|kill|start
    echo "export TRISTATE_TEST_PG_CTL='$(cd "$(dirname "$0")" && pwd)/$(basename "$0") pg $dir'"
}

# start, or stop with a pg_ctl shutdown mode (fast, immediate); waits.
pg_server() {
    local port
    port=$(cat "$dir/pg/port")
    case "$1" in
        start) as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 60 \
                   -o "-h 127.0.0.1 -p $port -k $dir/pg -c fsync=off -c max_connections=200" \
                   start >/dev/null ;;
        *) as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" -m "$1" -w stop >/dev/null ;;
    esac
}

stop_pg() {
    [ -d "$dir/pg/data" ] || return 0
    pg_server fast || true
}

# --- a primary and its streaming standby ----------------------------------
# DIR/pgpair/primary: initdb, wal_level=replica, a replication user
# (replicator, with a password, allowed from 127.0.0.1 only). DIR/pgpair/
# standby: pg_basebackup -R of it (standby.signal, primary_conninfo), a hot
# standby. Once it streams, the primary commits synchronously
# (synchronous_standby_names = '*'): what a client was told is committed is
# on the standby too, so a promotion after the primary's crash loses none of
# it. The promoted standby has no standby of its own and commits alone.
pp=$dir/pgpair

# pair_ctl NODE ARGS...: pg_ctl on NODE's data directory
pair_ctl() { local node=$1; shift; as_postgres "$pg_bin/pg_ctl" -D "$pp/$node" "$@"; }

pair_start_node() {
    local port
    port=$(cat "$pp/$1.port")
    pair_ctl "$1" -l "$pp/$1.log" -w -t 60 \
        -o "-h 127.0.0.1 -p $port -k $pp -c fsync=off -c max_connections=200" start >/dev/null
}

pair_psql() {
    as_postgres "$pg_bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$pp" -p "$(cat "$pp/primary.port")" \
        -U postgres -d postgres -c "$1"
}

pair_start() {
    [ -n "$pg_bin" ] || { echo "PostgreSQL server binaries not found" >&2; exit 1; }
    local primary_port=${1:?$usage} standby_port=${2:?$usage} password n
    mkdir -p "$pp"
    chown postgres:postgres "$pp"
    chmod 700 "$pp"
    echo "$primary_port" >"$pp/primary.port"
    echo "$standby_port" >"$pp/standby.port"
    as_postgres "$pg_bin/initdb" -D "$pp/primary" -A trust -U postgres -N >"$pp/initdb.log"
    printf '%s\n' 'wal_level = replica' 'max_wal_senders = 4' 'hot_standby = on' \
        >>"$pp/primary/postgresql.conf"
    # Clients (user postgres) from the socket and loopback; replication
    # only as replicator, with its password, from loopback.
    printf '%s\n' 'local all postgres trust' 'host all postgres 127.0.0.1/32 trust' \
        'host replication replicator 127.0.0.1/32 scram-sha-256' >"$pp/primary/pg_hba.conf"
    pair_start_node primary
    password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    pair_psql "CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '$password'"
    # -R writes standby.signal and primary_conninfo (with the password).
    PGPASSWORD=$password as_postgres "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" \
        -U replicator -D "$pp/standby" -R -X stream -c fast -N >"$pp/basebackup.log" 2>&1
    pair_start_node standby
    for n in $(seq 1 300); do
        [ "$(pair_psql "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ] && break
        [ "$n" = 300 ] && { echo "the standby does not stream" >&2; exit 1; }
        sleep 0.1
    done
    pair_psql "ALTER SYSTEM SET synchronous_standby_names = '*'"
    pair_psql "SELECT pg_reload_conf()" >/dev/null
    echo "export TRISTATE_TEST_PG_PRIMARY=127.0.0.1:$primary_port"
    echo "export TRISTATE_TEST_PG_STANDBY=127.0.0.1:$standby_port"
}

pair_stop() {
    local node
    for node in primary standby; do
        if [ -f "$pp/$node/postmaster.pid" ]; then
            pair_ctl "$node" -m fast -w stop >/dev/null || true
        fi
    done
}

pair_cmd() {
    case "${1:-}/${2:-}" in
        start/*) shift; pair_start "$@" ;;
        stop/) pair_stop ;;
        primary/stop|standby/stop) pair_ctl "$1" -m fast -w stop >/dev/null ;;
        primary/kill|standby/kill) pair_ctl "$1" -m immediate -w stop >/dev/null ;;
        promote/) pair_ctl standby -w -t 60 promote >/dev/null ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
}

# --- RabbitMQ ---------------------------------------------------------------
# Ports: AMQP $rabbit_port, Erlang distribution +1, rabbitmqctl's own node
# +2..+11, epmd +12 (a private epmd: a system one is never used or stopped),
# AMQPS (TLS) +13.
rb=$dir/rabbit
rabbit_bin=/usr/lib/rabbitmq/bin
rabbit_node=tristate-test@localhost

rabbit_settings() {
    if [ -f "$rb/settings" ]; then
        # shellcheck source=/dev/null
        . "$rb/settings"     # a restart reuses the port of the first start
    else
        rabbit_port=${TRISTATE_TEST_RABBIT_PORT:-56729}
    fi
    epmd_port=$((rabbit_port + 12))
    epmd_pidfile=$rb/epmd.pid
    rabbit_env_set $((rabbit_port + 1)) $((rabbit_port + 2)) $((rabbit_port + 11))
}

# rabbit_env_set DIST_PORT CTL_MIN CTL_MAX: the environment of the node
# $rabbit_node in $rb (AMQP port $rabbit_port, epmd $epmd_port).
rabbit_env_set() {
    # Everything the node and rabbitmqctl read comes from $rb.
    rabbit_env=(
        HOME="$rb/home"
        ERL_EPMD_PORT=$epmd_port
        RABBITMQ_CONF_ENV_FILE="$rb/rabbitmq-env.conf"
        RABBITMQ_CONFIG_FILE="$rb/rabbitmq.conf"
        RABBITMQ_ADVANCED_CONFIG_FILE="$rb/advanced.config"
        RABBITMQ_ENABLED_PLUGINS_FILE="$rb/enabled_plugins"
        RABBITMQ_MNESIA_BASE="$rb/mnesia"
        RABBITMQ_LOG_BASE="$rb/log"
        RABBITMQ_PID_FILE="$rb/beam.pid"
        RABBITMQ_NODENAME="$rabbit_node"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
        RABBITMQ_NODE_PORT="$rabbit_port"
        RABBITMQ_DIST_PORT="$1"
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
        RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
        RABBITMQ_CTL_DIST_PORT_MIN="$2"
        RABBITMQ_CTL_DIST_PORT_MAX="$3"
    )
    # A command, not a function: `"${as_rabbit[@]}" CMD &` sets $! to CMD's
    # own PID (setpriv and env exec it; a function would run in a subshell).
    as_rabbit=(setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups
               env -C "$rb" "${rabbit_env[@]}")
}

# A throwaway CA, and a server certificate for 127.0.0.1 and localhost (the
# clients check the name) and a client certificate it signed.
rabbit_tls_prepare() {
    local t=$rb/tls name
    command -v openssl >/dev/null || { echo "openssl is not installed" >&2; exit 1; }
    mkdir -p "$t"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -days 30 -subj /CN=tristate-test-ca -keyout "$t/ca.key" -out "$t/ca.pem" \
        2>>"$t/openssl.log"
    for name in server client; do
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -subj "/CN=tristate-test-$name" -keyout "$t/$name.key" \
            -out "$t/$name.csr" 2>>"$t/openssl.log"
    done
    printf 'subjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' \
        >"$t/server.ext"
    printf 'extendedKeyUsage = clientAuth\n' >"$t/client.ext"
    for name in server client; do
        openssl x509 -req -in "$t/$name.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
            -CAcreateserial -days 30 -extfile "$t/$name.ext" -out "$t/$name.pem" \
            2>>"$t/openssl.log"
    done
}

# One user per service, loaded at the node's first boot. Names follow the
# defaults (exchange tristate, topics tristate-conductor and tristate-
# compute) and allow a suffix on topics, so each test has topics of its own.
# Why each regex is what it is: docs/operator-guide.md.
rabbit_users_prepare() {
    local conductor compute api
    conductor=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    compute=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    api=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    printf 'conductor=%s\ncompute=%s\napi=%s\n' "$conductor" "$compute" "$api" \
        >"$rb/passwords"
    cat >"$rb/definitions.json" <<JSON
{"vhosts": [{"name": "/"}],
 "users": [
  {"name": "guest", "password": "guest", "tags": "administrator"},
  {"name": "tristate-conductor", "password": "$conductor", "tags": ""},
  {"name": "tristate-compute", "password": "$compute", "tags": ""},
  {"name": "tristate-api", "password": "$api", "tags": ""}],
 "permissions": [
  {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
  {"user": "tristate-conductor", "vhost": "/",
   "configure": "^(tristate|tristate-conductor.*|tristate_notifications\\\\..*|reply_.*)\$",
   "write": "^(tristate|tristate-conductor.*|tristate_notifications\\\\..*|reply_.*|amq\\\\.default)\$",
   "read": "^(tristate|tristate-conductor.*|tristate_notifications\\\\..*|reply_.*)\$"},
  {"user": "tristate-compute", "vhost": "/",
   "configure": "^(tristate|tristate-compute.*|reply_.*)\$",
   "write": "^(tristate|tristate-compute.*|reply_.*|amq\\\\.default)\$",
   "read": "^(tristate|tristate-compute.*|reply_.*)\$"},
  {"user": "tristate-api", "vhost": "/",
   "configure": "^(tristate|reply_.*)\$",
   "write": "^(tristate|reply_.*)\$",
   "read": "^(tristate|reply_.*)\$"}],
 "topic_permissions": [
  {"user": "tristate-conductor", "vhost": "/", "exchange": "tristate",
   "write": "^(tristate-conductor|tristate-compute|tristate_notifications\\\\.).*",
   "read": "^(tristate-conductor|tristate_notifications\\\\.).*"},
  {"user": "tristate-compute", "vhost": "/", "exchange": "tristate",
   "write": "^tristate-conductor.*", "read": "^tristate-compute.*"},
  {"user": "tristate-api", "vhost": "/", "exchange": "tristate",
   "write": "^tristate-conductor.*", "read": "^\$"}]}
JSON
}

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pidfile PIDFILE SIGNAL TRIES: send SIGNAL to the process PIDFILE
# names, wait up to TRIES tenths of a second for it to go (then SIGKILL),
# and remove PIDFILE. Nothing to do if it names no live process.
stop_pidfile() {
    local file=$1 sig=$2 tries=$3 pid
    alive "$file" || return 0
    pid=$(cat "$file")
    kill "-$sig" "$pid"
    for _ in $(seq "$tries"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; sleep 0.2; fi
    rm -f "$file"
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

rabbit_prepare() {
    [ -x "$rabbit_bin/rabbitmq-server" ] || { echo "rabbitmq-server is not installed" >&2; exit 1; }
    [ -f "$rb/settings" ] && return 0
    mkdir -p "$rb/home" "$rb/mnesia" "$rb/log"
    echo "rabbit_port=$rabbit_port" >"$rb/settings"
    : >"$rb/rabbitmq-env.conf"        # not /etc/rabbitmq/rabbitmq-env.conf
    echo '[].' >"$rb/enabled_plugins"  # no plugins
    rabbit_tls_prepare
    rabbit_users_prepare
    cat >"$rb/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$rabbit_port
loopback_users.guest = true
load_definitions = $rb/definitions.json
listeners.ssl.default = 127.0.0.1:$((rabbit_port + 13))
ssl_options.cacertfile = $rb/tls/ca.pem
ssl_options.certfile = $rb/tls/server.pem
ssl_options.keyfile = $rb/tls/server.key
# A client certificate is optional, but checked against the CA if sent.
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
CONF
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$rb/home/.erlang.cookie"
    chmod 400 "$rb/home/.erlang.cookie"
    chown -R rabbitmq:rabbitmq "$rb"
    chmod 750 "$rb"
}

rabbit_start() {
    rabbit_settings
    rabbit_prepare
    rabbit_boot $((rabbit_port + 1)) $((rabbit_port + 13))
}

# The epmd of $epmd_pidfile, started unless it runs.
rabbit_epmd() {
    alive "$epmd_pidfile" && return 0
    "${as_rabbit[@]}" epmd -address 127.0.0.1 -port "$epmd_port" \
        </dev/null >>"${epmd_pidfile%.pid}.log" 2>&1 &
    echo $! >"$epmd_pidfile"
}

# rabbit_boot PORT...: start the node of rabbit_settings (or cluster_node)
# after checking that its AMQP port and PORT... are free, and the epmd of
# $epmd_pidfile if it does not run; waits until the node is up, at most
# TRISTATE_TEST_RABBIT_BOOT_TIMEOUT (60) seconds.
rabbit_boot() {
    alive "$rb/beam.pid" && { echo "RabbitMQ already runs in $rb" >&2; exit 1; }
    local port
    for port in "$rabbit_port" "$@"; do
        if listening "$port"; then
            echo "port $port of 127.0.0.1 is taken: set TRISTATE_TEST_RABBIT_PORT" \
                "(or TRISTATE_TEST_RABBIT_CLUSTER_PORT) to a free N (see" \
                "tools/test-services.sh for the ports used from N on)" >&2
            exit 1
        fi
    done
    rabbit_epmd
    rm -f "$rb/beam.pid"
    "${as_rabbit[@]}" "$rabbit_bin/rabbitmq-server" </dev/null >>"$rb/server.out" 2>&1 &
    local server=$! boot=${TRISTATE_TEST_RABBIT_BOOT_TIMEOUT:-60} rc deadline
    deadline=$((SECONDS + boot))
    # Every rabbitmqctl run boots an Erlang VM of its own, which slows the
    # node's boot on a small machine: poll it once the AMQP port answers.
    while true; do
        rc=69
        if listening "$rabbit_port"; then
            rc=0
            "${as_rabbit[@]}" "$rabbit_bin/rabbitmqctl" -n "$rabbit_node" -q \
                -t $((deadline - SECONDS + 1)) await_startup >/dev/null 2>&1 || rc=$?
            [ "$rc" -eq 0 ] && break
        fi
        if ! kill -0 "$server" 2>/dev/null; then
            echo "RabbitMQ exited while starting; see $rb/server.out:" >&2
            tail -n 20 "$rb/server.out" >&2
            exit 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "RabbitMQ did not start in $boot s (rabbitmqctl await_startup exit" \
                "$rc); see $rb/log and $rb/server.out" >&2
            exit 1
        fi
        sleep 0.2
    done
    alive "$rb/beam.pid" || { echo "RabbitMQ is up but $rb/beam.pid names no process" >&2; exit 1; }
}

# Stop the node by its PID: SIGTERM (a clean shutdown) or SIGKILL; wait
# until the process is gone. epmd stays, for the next start.
rabbit_stop_node() { stop_pidfile "$rb/beam.pid" "$1" 300; }

stop_rabbit() {
    [ -d "$rb" ] || return 0
    rabbit_stop_node TERM || true
    if alive "$rb/epmd.pid"; then kill "$(cat "$rb/epmd.pid")" || true; fi
    rm -f "$rb/epmd.pid"
}

start_rabbit() {
    rabbit_start
    echo "export TRISTATE_TEST_RABBIT_URL=rabbit://guest:guest@127.0.0.1:$rabbit_port/"
    # AMQPS: the URL (user guest), the CA that signed the server's
    # certificate, a client certificate and key, and rabbit://USER:PASSWORD@
    # prefixes (add the vhost: /) of the per-service users.
    echo "export TRISTATE_TEST_RABBIT_TLS_URL=rabbit://guest:guest@127.0.0.1:$((rabbit_port + 13))/"
    echo "export TRISTATE_TEST_RABBIT_TLS_CA=$rb/tls/ca.pem"
    echo "export TRISTATE_TEST_RABBIT_TLS_CLIENT_CERT=$rb/tls/client.pem"
    echo "export TRISTATE_TEST_RABBIT_TLS_CLIENT_KEY=$rb/tls/client.key"
    local role password
    while IFS== read -r role password; do
        echo "export TRISTATE_TEST_RABBIT_TLS_${role^^}_URL=rabbit://tristate-$role:$password@127.0.0.1:$((rabbit_port + 13))/"
    done <"$rb/passwords"
    # The broker-restart test runs: $TRISTATE_TEST_RABBIT_CTL stop|kill|start
    echo "export TRISTATE_TEST_RABBIT_CTL='$(cd "$(dirname "$0")" && pwd)/$(basename "$0") rabbit $dir'"
}

# --- a three-node RabbitMQ cluster ------------------------------------------
# `cluster DIR start` starts three nodes tristate-c0..c2@localhost in
# DIR/cluster/n0..n2 (each its mnesia, logs and config; one Erlang cookie)
# on one private epmd, joins c1 and c2 to c0 with `rabbitmqctl
# join_cluster`, and prints TRISTATE_TEST_RABBIT_CLUSTER_URL (all three
# nodes, user guest). Ports from N = TRISTATE_TEST_RABBIT_CLUSTER_PORT
# (57100): epmd N, AMQP N+1..N+3, Erlang distribution N+4..N+6,
# rabbitmqctl's own nodes N+7..N+16. `cluster DIR stop` stops every node
# and epmd and removes DIR/cluster; `cluster DIR node I start|stop|kill`
# acts on node I alone (kill: SIGKILL; a node started again rejoins);
# `cluster DIR ctl I ARGS...` runs rabbitmqctl ARGS against node I.
cl=$dir/cluster
cluster_nodes=(0 1 2)

# cluster_node I: rb, rabbit_node, rabbit_port... of node I.
cluster_node() {
    local base
    base=$(cat "$cl/port")
    rb=$cl/n$1
    rabbit_node=tristate-c$1@localhost
    rabbit_port=$((base + 1 + $1))
    epmd_port=$base
    epmd_pidfile=$cl/epmd.pid
    cluster_dist_port=$((base + 4 + $1))
    rabbit_env_set "$cluster_dist_port" $((base + 7)) $((base + 16))
}

cluster_prepare_node() {
    cluster_node "$1"
    mkdir -p "$rb/home" "$rb/mnesia" "$rb/log"
    : >"$rb/rabbitmq-env.conf"
    echo '[].' >"$rb/enabled_plugins"
    cat >"$rb/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$rabbit_port
loopback_users.guest = true
CONF
    cp "$cl/cookie" "$rb/home/.erlang.cookie"
    chmod 400 "$rb/home/.erlang.cookie"
}

cluster_ctl() {
    cluster_node "$1"
    shift
    "${as_rabbit[@]}" "$rabbit_bin/rabbitmqctl" -n "$rabbit_node" -q "$@"
}

cluster_start() {
    [ -x "$rabbit_bin/rabbitmq-server" ] || { echo "rabbitmq-server is not installed" >&2; exit 1; }
    [ -d "$cl" ] && { echo "a cluster already exists in $cl" >&2; exit 1; }
    mkdir -p "$cl"
    echo "${TRISTATE_TEST_RABBIT_CLUSTER_PORT:-57100}" >"$cl/port"
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$cl/cookie"
    local i pids=() urls=()
    for i in "${cluster_nodes[@]}"; do cluster_prepare_node "$i"; done
    chown -R rabbitmq:rabbitmq "$cl"
    chmod 750 "$cl"
    # epmd first, then the nodes side by side, each waited for.
    cluster_node 0
    rabbit_epmd
    for i in "${cluster_nodes[@]}"; do
        ( cluster_node "$i"; rabbit_boot "$cluster_dist_port" ) &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i"; done
    # Both join c0 at once (each rabbitmqctl run boots an Erlang VM: ~1 s).
    pids=()
    for i in 1 2; do
        ( cluster_ctl "$i" stop_app && cluster_ctl "$i" join_cluster tristate-c0@localhost \
              && cluster_ctl "$i" start_app ) >"$cl/join$i.out" 2>&1 &
        pids+=($!)
    done
    for i in 1 2; do
        wait "${pids[$((i - 1))]}" || { echo "node $i did not join the cluster:" >&2;
                                        cat "$cl/join$i.out" >&2; exit 1; }
    done
    for i in "${cluster_nodes[@]}"; do
        cluster_node "$i"
        urls+=("guest:guest@127.0.0.1:$rabbit_port")
    done
    echo "export TRISTATE_TEST_RABBIT_CLUSTER_URL=rabbit://$(IFS=,; echo "${urls[*]}")/"
}

cluster_stop() {
    [ -d "$cl" ] || return 0
    local i pids=()
    # Side by side: a node that stops last waits for none of the others.
    for i in "${cluster_nodes[@]}"; do
        ( cluster_node "$i"; stop_pidfile "$rb/beam.pid" TERM 100 ) &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || true; done
    stop_pidfile "$cl/epmd.pid" TERM 20
    rm -rf "$cl"
}

cluster_cmd() {
    case "${1:-}" in
        start) cluster_start ;;
        stop) cluster_stop ;;
        node)
            [ -d "$cl" ] || { echo "no cluster in $cl" >&2; exit 1; }
            cluster_node "${2:?node number}"
            case "${3:-}" in
                start) rabbit_boot "$cluster_dist_port" ;;
                stop) stop_pidfile "$rb/beam.pid" TERM 300 ;;
                kill) stop_pidfile "$rb/beam.pid" KILL 300 ;;
                *) echo "$usage" >&2; exit 2 ;;
            esac ;;
        ctl) shift; cluster_ctl "$@" ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
}

# --- libvirt -----------------------------------------------------------------
lv=$dir/libvirt
libvirt_uri=qemu:///system

libvirt_answers() { virsh -c "$libvirt_uri" version >/dev/null 2>&1; }

# Starts the daemons in the background; libvirt_wait prints the export.
libvirt_begin() {
    command -v libvirtd >/dev/null && command -v virsh >/dev/null || return 0
    mkdir -p "$lv"
    if libvirt_answers; then
        echo "$libvirt_uri" >"$lv/uri"      # someone else's: used, not stopped
        return 0
    fi
    # QEMU probes KVM at every define; a /dev/kvm it cannot open costs tens
    # of seconds each time (the tests use TCG, but the probe still runs).
    if [ -c /dev/kvm ] && getent group kvm >/dev/null; then
        chgrp kvm /dev/kvm && chmod 660 /dev/kvm || true
    fi
    virtlogd -d -p "$lv/virtlogd.pid" >>"$lv/virtlogd.out" 2>&1 || true
    libvirtd -d -p "$lv/libvirtd.pid" >>"$lv/libvirtd.out" 2>&1 || true
}

libvirt_wait() {
    [ -d "$lv" ] || { echo "libvirt is not installed: the real-hypervisor tests skip" >&2; return 0; }
    if [ ! -f "$lv/uri" ]; then
        local deadline=$((SECONDS + 90))
        until libvirt_answers; do
            if [ "$SECONDS" -ge "$deadline" ] || ! alive "$lv/libvirtd.pid"; then
                echo "libvirtd did not start (see $lv/libvirtd.out): the" \
                    "real-hypervisor tests skip" >&2
                return 0
            fi
            sleep 0.5
        done
        echo "$libvirt_uri" >"$lv/uri"
    fi
    echo "export TRISTATE_TEST_LIBVIRT_URI=$(cat "$lv/uri")"
}

stop_libvirt() {
    local name
    for name in libvirtd virtlogd; do
        if alive "$lv/$name.pid"; then kill "$(cat "$lv/$name.pid")" || true; fi
    done
}

# --- a private libvirtd ------------------------------------------------------
# One that only a test uses, so that it may kill it: libvirtd in session
# mode as user libvirt-qemu, with its sockets, state and logs in
# DIR/lvd (the system's libvirtd, maybe someone else's, is never
# touched). Its drivers are reached through its socket, e.g.
#   test+unix:///default?socket=DIR/lvd/run/libvirt/libvirt-sock
# `libvirtd DIR start HELPER`: its guests may also sit on Linux bridges,
# through HELPER as its qemu.conf's bridge_helper (the tests' stand-in for
# qemu-bridge-helper: tests/functional/bridge_helper.py), the daemon
# given CAP_NET_ADMIN (ambient) to set the MTU of a guest's tap.
pl=$dir/lvd     # short: QEMU socket paths under it must fit in 107 bytes
private_uri="test+unix:///default?socket=$pl/run/libvirt/libvirt-sock"

private_libvirtd_start() {
    command -v libvirtd >/dev/null && command -v virsh >/dev/null \
        || { echo "libvirtd is not installed" >&2; exit 1; }
    id libvirt-qemu >/dev/null 2>&1 || { echo "no user libvirt-qemu" >&2; exit 1; }
    alive "$pl/pid" && { echo "the private libvirtd already runs in $pl" >&2; exit 1; }
    mkdir -p "$pl/home" "$pl/run" "$pl/c/libvirt"
    # A host_uuid of its own: libvirt refuses a live migration between two
    # daemons that say they are the same host (the live migration test).
    [ -f "$pl/c/libvirt/libvirtd.conf" ] ||
        echo "host_uuid = \"$(cat /proc/sys/kernel/random/uuid)\"" >"$pl/c/libvirt/libvirtd.conf"
    local caps=()
    if [ -n "${1:-}" ]; then
        echo "bridge_helper = \"$1\"" >"$pl/c/libvirt/qemu.conf"
        caps=(--inh-caps=+net_admin --ambient-caps=+net_admin)
    fi
    chown -R libvirt-qemu "$pl"
    chmod 755 "$dir" "$pl"
    chmod 700 "$pl/run"
    setpriv --reuid=libvirt-qemu --regid="$(id -g libvirt-qemu)" --init-groups \
        "${caps[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$pl/home" \
        XDG_RUNTIME_DIR="$pl/run" XDG_CONFIG_HOME="$pl/c" \
        XDG_CACHE_HOME="$pl/home/.cache" libvirtd </dev/null >>"$pl/libvirtd.out" 2>&1 &
    echo $! >"$pl/pid"
    local deadline=$((SECONDS + 60))
    until virsh -c "$private_uri" version >/dev/null 2>&1; do
        if ! alive "$pl/pid" || [ "$SECONDS" -ge "$deadline" ]; then
            echo "the private libvirtd did not start; see $pl/libvirtd.out:" >&2
            tail -n 20 "$pl/libvirtd.out" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "$private_uri"
}

private_libvirtd_stop() { stop_pidfile "$pl/pid" "$1" 100; }

# On stop (not on kill: guests outlive a libvirtd restart), what the daemon
# started goes too: QEMU guests a test left, and its session virtlogd.
private_libvirtd_reap() {
    local f
    for f in "$pl"/run/libvirt/qemu/run/*.pid "$pl/run/libvirt/virtlogd.pid"; do
        [ "$(basename "$f")" = driver.pid ] && continue
        if alive "$f"; then kill "$(cat "$f")" || true; fi
    done
}

case "$cmd" in
    start) libvirt_begin; start_pg; start_rabbit; libvirt_wait ;;
    stop) private_libvirtd_stop TERM; private_libvirtd_reap; stop_libvirt; stop_rabbit; stop_pg ;;
    rabbit)
        case "${3:-}" in
            start) rabbit_start ;;
            stop) rabbit_stop_node TERM ;;
            kill) rabbit_stop_node KILL ;;
            ctl) shift 3; rabbit_settings; "${as_rabbit[@]}" "$rabbit_bin/rabbitmqctl" -n "$rabbit_node" -q "$@" ;;
            *) echo "$usage" >&2; exit 2 ;;
        esac ;;
    libvirtd)
        case "${3:-}" in
            start) private_libvirtd_start "${4:-}" ;;
            stop) private_libvirtd_stop TERM; private_libvirtd_reap ;;
            kill) private_libvirtd_stop KILL ;;
            *) echo "$usage" >&2; exit 2 ;;
        esac ;;
    cluster) shift 2; cluster_cmd "$@" ;;
    pgpair) shift 2; pair_cmd "$@" ;;
    pg)
        case "${3:-}" in
            start) pg_server start ;;
            stop) pg_server fast ;;
            kill) pg_server immediate ;;
            *) echo "$usage" >&2; exit 2 ;;
        esac ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
