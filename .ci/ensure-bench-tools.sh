#!/usr/bin/env bash
# Installs the native tools benchmarks/agent_overhead.py measures the agent's load engines
# against, from Debian's packages: sysbench 1.0 (the MariaDB/MySQL comparisons) and
# pgbench (shipped with the PostgreSQL server package on Debian 12, which
# .ci/ensure-services.sh installs; `postgresql` here if it is not). Not part of `make test`:
# only the overhead benchmark needs them. Safe to run any number of times: it does
# nothing when both are there.
set -euo pipefail
. "$(dirname "$0")/apt-missing.sh"

log() { echo "ensure-bench-tools: $*"; }

missing=()
command -v pgbench >/dev/null || missing+=(postgresql)
command -v sysbench >/dev/null || missing+=(sysbench)
if [ ${#missing[@]} -eq 0 ]; then
    log "pgbench and sysbench installed: $(pgbench --version); $(sysbench --version)"
    exit 0
fi
install_missing ensure-bench-tools "${missing[@]}"
log "$(pgbench --version); $(sysbench --version)"
