#!/usr/bin/env bash
# README command 1: install Tristate into a virtualenv on a fresh Debian 12
# machine (as root) and run it on its embedded default (one conductor and
# three agents on the fake hypervisor, SQLite, the in-memory bus), showing it
# at work. Extra arguments go to tristate-all. To keep it running, start
# .venv/bin/tristate-all --hosts 3 yourself.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(python3 python3-venv)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv=${TRISTATE_VENV:-.venv}
if [ ! -x "$venv/bin/tristate-all" ]; then
    echo "== installing Tristate into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q .
fi

state=${TRISTATE_DEMO_DIR:-$(mktemp -d /tmp/tristate-demo.XXXXXX)}
echo "== tristate-all --hosts 3 --state-dir $state --demo"
exec "$venv/bin/tristate-all" --hosts 3 --state-dir "$state" --demo \
    --log-file "$state/tristate.log" "$@"
