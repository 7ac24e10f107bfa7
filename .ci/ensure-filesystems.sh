#!/usr/bin/env bash
# Installs the mkfs tools the agent's study tests format loop-mounted image files with
# (ext4 comes with e2fsprogs; xfs and btrfs from Debian's xfsprogs and btrfs-progs).
# Safe to run any number of times: it does nothing when they are there.
set -euo pipefail
. "$(dirname "$0")/apt-missing.sh"

log() { echo "ensure-filesystems: $*"; }

missing=()
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)
command -v mkfs.btrfs >/dev/null || missing+=(btrfs-progs)
command -v losetup >/dev/null || missing+=(mount)
install_missing ensure-filesystems "${missing[@]}"
log "mkfs.ext4, mkfs.xfs, mkfs.btrfs and losetup installed"
