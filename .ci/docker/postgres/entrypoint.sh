#!/bin/sh
# First start: create the cluster, the user (with its password) and the
# database, as the official image does; then run the server in the foreground.
set -eu
if [ "${1:-}" = postgres ]; then
    shift
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
    user=${POSTGRES_USER:-postgres}
    pwfile=$(mktemp)
    printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
    rm -f "$pwfile"
    pg_ctl --pgdata="$PGDATA" --wait --silent \
        --options="-c listen_addresses='' -k /tmp" start
    if [ "${POSTGRES_DB:-$user}" != postgres ]; then
        createdb --host=/tmp --username="$user" "${POSTGRES_DB:-$user}"
    fi
    pg_ctl --pgdata="$PGDATA" --wait --silent --mode=fast stop
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi
exec postgres -D "$PGDATA" -k /tmp "$@"
