#!/usr/bin/env bash
# Builds what tests/deploy needs to run docker-compose.yml on a machine that
# reaches no image registry, and keeps it between runs:
#
#   bh-ci/debian-python:bookworm  Debian bookworm + Python 3.11 (debootstrap),
#                                 the base of the app image (BASE_IMAGE build-arg)
#   bh-ci/postgres:15             Debian's postgresql-15, in place of postgres:15
#   bh-ci/redis:7                 Debian's redis-server, in place of redis:7
#   a wheelhouse                  requirements.txt as wheels for that base image
#
# Each image is built only when its tag is missing (docker rmi it to rebuild).
# The wheelhouse exists because pip inside `docker build` does not trust this
# machine's TLS-intercepting proxy to PyPI ("self-signed certificate in
# certificate chain"), while pip on the host does (its CA bundle): the wheels
# are downloaded by the base image's own Python (its exact version decides
# environment markers such as async-timeout's) with the host's CA bundle
# mounted, then the build installs from them with PIP_NO_INDEX.
#
# Prints the wheelhouse directory on its last line. Needs root and dockerd
# (.ci/ensure-docker.sh).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
CACHE=${BH_CI_CACHE:-/var/cache/bh-ci}
BASE=bh-ci/debian-python:bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CA_BUNDLE=${BH_CI_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

log() { echo "images: $*" >&2; }
have() { docker image inspect "$1" >/dev/null 2>&1; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9  # one builder at a time; the others find the images made

if ! have "$BASE"; then
    log "debootstrap bookworm (about a minute)"
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || { tail -n 20 "$CACHE/debootstrap.log" >&2; exit 1; }
    tar -C "$rootfs" -c . | docker import - "$BASE" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
fi

for service in postgres:15 redis:7; do
    name=${service%%:*}
    if ! have "bh-ci/$service"; then
        log "building bh-ci/$service from Debian's packages"
        docker build --quiet --network host --build-arg "BASE_IMAGE=$BASE" \
            -t "bh-ci/$service" "$name" >/dev/null
    fi
done

key=$( (cat "$ROOT/requirements.txt"; docker image inspect -f '{{.Id}}' "$BASE") | sha256sum | cut -c1-16)
wheels="$CACHE/wheels-$key"
if [ ! -f "$wheels/.complete" ]; then
    log "downloading the wheels of requirements.txt for $BASE"
    rm -rf "$wheels"
    mkdir -p "$wheels"
    # The agent (-e ./agents) is built from the checkout in the image; its
    # build backend comes from the wheelhouse.
    grep -v '^-e' "$ROOT/requirements.txt" >"$wheels/requirements.txt"
    echo "setuptools>=68" >>"$wheels/requirements.txt"
    docker run --rm --network host \
        -v "$wheels:/wheels" -v "$CA_BUNDLE:/ca.crt:ro" "$BASE" \
        sh -c 'python3 -m venv /tmp/venv && /tmp/venv/bin/pip download --quiet \
            --disable-pip-version-check --cert /ca.crt -r /wheels/requirements.txt -d /wheels'
    touch "$wheels/.complete"
fi
# Wheelhouses of older requirements or base images are of no further use.
find "$CACHE" -maxdepth 1 -name 'wheels-*' ! -path "$wheels" -exec rm -rf {} +
echo "$wheels"
