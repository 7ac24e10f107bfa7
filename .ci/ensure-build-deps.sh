#!/usr/bin/env bash
# Makes sure what pip needs to build the C extensions of requirements-dev.txt is
# installed from Debian's packages: mysqlclient (the agent's MariaDB/MySQL load driver,
# MariaDB's C client library under Python) compiles against libmariadb-dev, found
# through pkg-config, with a C compiler; the agent's own optional module
# (agents/setup.py) needs the compiler alone. Runs before `pip install -r requirements-dev.txt`
# (Makefile); safe to run any number of times: it does nothing when all are there.
set -euo pipefail
. "$(dirname "$0")/apt-missing.sh"

missing=()
pkg-config --exists libmariadb 2>/dev/null || missing+=(libmariadb-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
install_missing ensure-build-deps "${missing[@]}"
