#!/usr/bin/env bash
# Makes sure what pip needs to build the C extensions of requirements-dev.txt is
# installed from Debian's packages: mysqlclient (the agent's MariaDB/MySQL load driver,
# MariaDB's C client library under Python) compiles against libmariadb-dev, found
# through pkg-config, with a C compiler. Runs before `pip install -r requirements-dev.txt`
# (Makefile); safe to run any number of times: it does nothing when all are there.
set -euo pipefail

log() { echo "ensure-build-deps: $*"; }

missing=()
pkg-config --exists libmariadb 2>/dev/null || missing+=(libmariadb-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    log "${missing[*]} missing and not root: install them (apt-get install ${missing[*]}), then run again" >&2
    exit 1
fi
log "installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
