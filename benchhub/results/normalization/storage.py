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


def normalize_filesystem(raw: str | None) -> str:
    text = (raw or "").strip().lower()
    if not text:
        return ""
    return _FILESYSTEM_ALIASES.get(text, text)


NO_OPTIONS = EMPTY_SHOWN


def normalize_mount_options(raw: str | list[str] | None) -> str:
    """A sorted, de-duplicated, comma-joined set: 'noatime,rw,sync'.
    "(none)", as the pages print the empty set, is no option: the filter
    ``mount_options=(none)`` finds the runs mounted without any, and a
    series of them is ``reference=(none)``."""
    if raw is None:
        return ""
    items = raw.split(",") if isinstance(raw, str) else raw
    options = set()
    for item in items:
        option = re.sub(r"\s+", " ", item.strip().lower())
        if option and option != NO_OPTIONS:
            options.add(_OPTION_ALIASES.get(option, option))
    return ",".join(sorted(options))


def normalize_io_scheduler(raw: str | None) -> str:
    """'[mq-deadline] kyber bfq none' (sysfs) or 'deadline' → the active one."""
    text = (raw or "").strip().lower()
    active = re.search(r"\[([^\]]+)\]", text)
    if active:
        return active.group(1).strip()
    return text.split()[0] if text else ""
