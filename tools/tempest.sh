#!/usr/bin/env bash
# Tempest's compute API tests against the embedded plane, behind a real
# Keystone (issue 22): `tox -e tempest` runs this. Makes (once, cached in
# ~/.cache/tristate) the Keystone and Tempest virtualenvs, then runs
# tools/tempest.py with the Python of the calling virtualenv (tox's, or
# TRISTATE_PYTHON). Arguments go to tools/tempest.py, e.g.
#   tools/tempest.sh --regex tempest.api.compute.flavors
#   tools/tempest.sh --include-list tools/tempest-ci.txt
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/cached-venv.sh
cached_venv TRISTATE_TEST_KEYSTONE keystone-venv "${KEYSTONE_PINS[@]}"
cached_venv TRISTATE_TEST_TEMPEST tempest-venv "${TEMPEST_PINS[@]}"
exec "${TRISTATE_PYTHON:-python}" tools/tempest.py "$@"
