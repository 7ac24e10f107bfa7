#!/usr/bin/env bash
# Makes sure a Docker daemon and docker-compose from Debian's packages answer,
# for tests/deploy (docker-compose.yml on a real daemon), plus debootstrap,
# which builds the base images there (.ci/docker/images.sh). Safe to run any
# number of times: each step checks first.
#
# The daemon runs the way this machine allows: no iptables, no default bridge
# (containers use the host network). Storage: overlay2 when the kernel has
# overlayfs (a build there takes a minute), else vfs, which copies the whole
# filesystem for every layer and container (a build takes ten times longer).
# Its log is /var/log/bh-dockerd.log.
set -euo pipefail

log() { echo "ensure-docker: $*"; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (apt-get install, starting dockerd)" >&2
    exit 1
fi

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    driver=vfs
    if grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null; then
        driver=overlay2
    fi
    log "starting dockerd (storage driver $driver)"
    setsid dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver="$driver" \
        >>/var/log/bh-dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 0.5
    done
fi
if ! docker info >/dev/null 2>&1; then
    log "dockerd does not answer after 30 s; see /var/log/bh-dockerd.log" >&2
    tail -n 20 /var/log/bh-dockerd.log >&2
    exit 1
fi
log "Docker $(docker version -f '{{.Server.Version}}') answers ($(docker info -f '{{.Driver}}')); $(docker-compose version --short 2>/dev/null | sed 's/^/docker-compose /')"
