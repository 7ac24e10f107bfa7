#!/usr/bin/env bash
# Makes sure the servers the test suite talks to answer on loopback:
# PostgreSQL (5432), Redis (6379) and MariaDB (3306), installing them from
# Debian's packages if they are missing and starting them if they are down.
# Safe to run any number of times.
set -euo pipefail

log() { echo "ensure-services: $*"; }

port_answers() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_for() {
    local name=$1 port=$2
    for _ in $(seq 1 60); do
        port_answers "$port" && return 0
        sleep 0.5
    done
    log "$name does not answer on 127.0.0.1:$port after 30 s" >&2
    exit 1
}

apt_updated=""
apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        log "$* missing and not root: install it, then run again" >&2
        exit 1
    fi
    if [ -z "$apt_updated" ]; then
        apt-get update -qq
        apt_updated=1
    fi
    log "installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- PostgreSQL ---------------------------------------------------------------
if ! command -v pg_ctlcluster >/dev/null; then
    apt_install postgresql
fi
if ! port_answers 5432; then
    log "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
fi
wait_for PostgreSQL 5432
# The tests connect as postgres over TCP without a password. A packaged
# install asks for one on 127.0.0.1; the machines this suite runs on trust
# loopback, and so does a fresh install once this has run.
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atc "select 1" >/dev/null 2>&1; then
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    hba=/etc/postgresql/$version/main/pg_hba.conf
    log "allowing trust auth on loopback in $hba"
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$version" main reload
fi

# --- Redis --------------------------------------------------------------------
if ! command -v redis-server >/dev/null; then
    apt_install redis-server
fi
if ! port_answers 6379; then
    log "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
fi
wait_for Redis 6379

# --- MariaDB (the agent's benchmarks run against it) -------------------------
if [ ! -x /usr/sbin/mariadbd ]; then
    apt_install mariadb-server
fi
if ! port_answers 3306; then
    log "starting MariaDB"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
wait_for MariaDB 3306

log "PostgreSQL, Redis and MariaDB answer on 127.0.0.1"
