#!/usr/bin/env bash
# README command 2: install everything the tests need on a fresh Debian 12
# machine (as root) and run the whole suite with tox. `.ci/run` calls this.
#   tools/run-tests.sh [tox args...]     e.g. tools/run-tests.sh -e py3 -- -k gateway
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(python3 python3-venv python3-dev gcc pkg-config libvirt-dev postgresql rabbitmq-server util-linux openssl
          libvirt-daemon-system qemu-system-x86 qemu-utils haproxy pgbouncer
          mtools syslinux syslinux-common fdisk    # these four: tools/build-test-image.sh
          dnsmasq-base busybox-static              # the agent's DHCP and its tests' client
          openssh-client)                          # SSH into the test guest (its dropbear)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv=${TRISTATE_VENV:-.venv}
if [ ! -x "$venv/bin/tox" ]; then
    echo "== virtualenv $venv with tox"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q 'tox>=4,<5'
fi

# A real Glance and a real Keystone for the tests against them
# (tests/integration/test_glance_*.py, keystone_support.py), and Tempest
# for its CI subset (tests/integration/test_tempest_subset.py): each in a
# virtualenv of its own (they pin library versions of their own), made once
# for the pins of tools/cached-venv.sh and kept in the cache directory
# (~250 MB each; ~35 s to ~2 min to install here). A virtualenv named by
# TRISTATE_TEST_GLANCE, TRISTATE_TEST_KEYSTONE or TRISTATE_TEST_TEMPEST is
# used as it is.
source tools/cached-venv.sh
cached_venv TRISTATE_TEST_GLANCE glance-venv "${GLANCE_PINS[@]}"
cached_venv TRISTATE_TEST_KEYSTONE keystone-venv "${KEYSTONE_PINS[@]}"
cached_venv TRISTATE_TEST_TEMPEST tempest-venv "${TEMPEST_PINS[@]}"

work=$(mktemp -d /tmp/tristate-tests.XXXXXX)
chmod 755 "$work"
# The suite runs on TRISTATE_TEST_WORKERS pytest-xdist workers (2 unless
# told; 1: one process), each with a PostgreSQL and a RabbitMQ of its own:
# worker N > 0 gets TRISTATE_TEST_W<N>_* (tests/conftest.py reads them), on
# ports 100 * N above the first set's, so the tests that stop a server
# never hit the other worker's tests.
workers=${TRISTATE_TEST_WORKERS:-2}
cleanup() {
    local dir
    for dir in "$work"/w*; do
        [ -d "$dir" ] && { tools/test-services.sh stop "$dir" || true; }
    done
    tools/test-services.sh stop "$work" || true
    rm -rf "$work"
}
trap cleanup EXIT
echo "== starting PostgreSQL and RabbitMQ on 127.0.0.1 (a set per worker: $workers), and libvirtd"
services=$(tools/test-services.sh start "$work")   # fails the run if one fails
eval "$services"
export TRISTATE_TEST_PG_URL TRISTATE_TEST_RABBIT_URL TRISTATE_TEST_RABBIT_CTL
for ((n = 1; n < workers; n++)); do
    more=$(TRISTATE_TEST_PG_PORT=$((${TRISTATE_TEST_PG_PORT:-54329} + 100 * n)) \
           TRISTATE_TEST_RABBIT_PORT=$((${TRISTATE_TEST_RABBIT_PORT:-56729} + 100 * n)) \
           tools/test-services.sh start "$work/w$n")
    eval "$(sed "s/^export TRISTATE_TEST_/export TRISTATE_TEST_W${n}_/" <<<"$more")"
done
export TRISTATE_TEST_WORKERS=$workers
export TRISTATE_TEST_LIBVIRT_URI=${TRISTATE_TEST_LIBVIRT_URI:-}

# The test guest, built once (into its cache, kept between runs; apt fetches
# its kernel) and handed to the tests as TRISTATE_TEST_IMAGE (qcow2). When apt
# cannot fetch the packages (exit 3) the tests that boot it skip, saying why.
export TRISTATE_TEST_IMAGE_CACHE=${TRISTATE_TEST_IMAGE_CACHE:-/var/cache/tristate-test-image}
echo "== the test image (tools/build-test-image.sh)"
image_status=0
tools/build-test-image.sh "$work/test-image.qcow2" --format qcow2 >/dev/null || image_status=$?
case $image_status in
    0) export TRISTATE_TEST_IMAGE=$work/test-image.qcow2 ;;
    3) echo "== no test image: apt cannot fetch its packages" ;;
    *) exit "$image_status" ;;
esac

echo "== tox $*"
"$venv/bin/tox" "$@"
