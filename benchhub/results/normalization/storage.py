"""Filesystems, mount options and I/O schedulers to a fixed vocabulary."""

import re

from benchhub.results.normalization.empty import EMPTY_SHOWN

_FILESYSTEM_ALIASES = {
    "ufs2": "ufs",
    "ffs": "ufs",
    "ext4dev": "ext4",
    "hfs+": "hfs",
    "hfsplus": "hfs",
    "overlayfs": "overlay",
    "fat32": "vfat",
    "fat": "vfat",
    "nfs4": "nfs",
    "raw device": "raw",
    "raw partition": "raw",
    "none": "raw",
    "zfs (openzfs)": "zfs",
    "reiser": "reiserfs",
}

_OPTION_ALIASES = {
    "soft-updates": "softupdates",
    "soft updates": "softupdates",
    "su": "softupdates",
}


# Options that do not change how fast the filesystem does I/O, left out of
# the normalized set (the raw string keeps them): they differ from machine to
# machine for reasons of administration, and split one mount-option series
# into several ("noatime,rw" beside "noatime"). Matched on the name before
# "=", whatever the value. Anything that changes what reaches the disk, or
# when, stays: noatime/relatime/strictatime, sync/async, data=, barrier,
# commit=, discard, compress=, journal options, quotas (they cost work) …
IRRELEVANT_MOUNT_OPTIONS = frozenset(
    {
        # read-write is what a database needs anyway
        "rw",
        # who may do what: permission checks, not I/O
        "suid", "nosuid", "dev", "nodev", "exec", "noexec",
        "uid", "gid", "umask", "fmask", "dmask", "mode",
        # who may use the blocks reserved for root, and how they are accounted
        "resuid", "resgid", "resv_strict",
        # what happens after an error (continue, remount-ro, panic)
        "errors",
        # fstab's and mount(8)'s own bookkeeping, never passed to the filesystem
        "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group",
        "nofail", "_netdev", "comment",
        # SELinux labels
        "context", "fscontext", "defcontext", "rootcontext", "seclabel",
    }
)  # fmt: skip
# userspace options of fstab (x-systemd.automount, x-gvfs-show …)
_IRRELEVANT_PREFIXES = ("x-",)


def mount_option_is_irrelevant(option: str) -> bool:
    """Whether ``option`` (normalized: lower case) is one that
    normalize_mount_options leaves out as irrelevant to performance."""
    name = option.split("=", 1)[0]
    return name in IRRELEVANT_MOUNT_OPTIONS or name.startswith(_IRRELEVANT_PREFIXES)


def normalize_filesystem(raw: str | None) -> str:
    text = (raw or "").strip().lower()
    if not text:
        return ""
    return _FILESYSTEM_ALIASES.get(text, text)


NO_OPTIONS = EMPTY_SHOWN


def normalize_mount_options(raw: str | list[str] | None) -> str:
    """A sorted, de-duplicated, comma-joined set: 'noatime,sync', without
    the options irrelevant to performance (IRRELEVANT_MOUNT_OPTIONS: 'rw',
    'errors=remount-ro' …). "(none)", as the pages print the empty set, is
    no option: the filter ``mount_options=(none)`` finds the runs mounted
    without any, and a series of them is ``reference=(none)``."""
    if raw is None:
        return ""
    items = raw.split(",") if isinstance(raw, str) else raw
    options = set()
    for item in items:
        option = re.sub(r"\s+", " ", item.strip().lower())
        if option and option != NO_OPTIONS and not mount_option_is_irrelevant(option):
            options.add(_OPTION_ALIASES.get(option, option))
    return ",".join(sorted(options))


def normalize_io_scheduler(raw: str | None) -> str:
    """'[mq-deadline] kyber bfq none' (sysfs) or 'deadline' → the active one."""
    text = (raw or "").strip().lower()
    active = re.search(r"\[([^\]]+)\]", text)
    if active:
        return active.group(1).strip()
    return text.split()[0] if text else ""
