# Sourced by tools/run-tests.sh and tools/tempest.sh: the virtualenvs of
# the OpenStack services the tests run for real (Glance, Keystone) and of
# Tempest. Each pins library versions of its own, so each has a virtualenv
# of its own, made once for its pins and kept in the cache directory
# (~/.cache/tristate). A virtualenv named by its variable is used as it is.
#   cached_venv VAR NAME PIN...    sets and exports VAR

GLANCE_PINS=('glance>=33,<34' 'gunicorn>=23,<24')
KEYSTONE_PINS=('keystone>=30,<31' 'gunicorn>=23,<24')
TEMPEST_PINS=('tempest>=47,<48')

cached_venv() {
    local var=$1 name=$2
    shift 2
    local venv=${!var:-}
    if [ -z "$venv" ]; then
        venv=${XDG_CACHE_HOME:-$HOME/.cache}/tristate/$name
        if [ "$(cat "$venv/.tristate-pins" 2>/dev/null)" != "$*" ]; then
            echo "== virtualenv $venv with $*" >&2
            rm -rf "$venv"
            python3 -m venv "$venv"
            "$venv/bin/pip" install -q --upgrade pip >&2
            "$venv/bin/pip" install -q "$@" >&2
            echo "$*" > "$venv/.tristate-pins"
        fi
    fi
    printf -v "$var" '%s' "$venv"
    export "${var?}"
}
