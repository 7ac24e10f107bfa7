#!/usr/bin/env bash
# Runs the whole suite. pytest exits 5 when it collected no test: for this
# project that means discovery broke, so it is a failure with its own message.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no test: check testpaths in pyproject.toml" >&2
    exit 1
fi
exit "$status"
