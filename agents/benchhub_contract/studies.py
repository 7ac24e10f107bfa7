"""Which of a study's varied factors ``benchhub-agent study --like`` can repeat on another
machine: the site's axis name → the agent's ``--vary`` name, and what the user adds to
map the levels to their machine (the study page prints it beside the command)."""

from __future__ import annotations

REPEATABLE = {
    "filesystem": "filesystem",
    "io_scheduler": "io-scheduler",
    "config_profile": "config",
    "mount_options": "mount-options",
    "protocol": "protocol",
    "cpu_placement": "pin",
}

# What --like needs from the user for each factor, beyond --dsn (and --server to upload).
NEEDS = {
    "filesystem": "--on DIR,DIR… (mount points of the study's filesystems) or "
    "--format-scratch IMAGE_DIR (as root)",
    "io_scheduler": "--on DIR (a directory on the device whose scheduler varies; root)",
    "mount_options": "--on DIR (the mount point to remount; root)",
    "config_profile": "--restart-command CMD where a profile needs a restart",
}
