"""Real filesystems on loop devices for the study tests: image files in a test's own
folder, attached, formatted, mounted, and all of it undone afterwards.

Loop devices need root and losetup; without them the tests that use these skip,
saying so. The mkfs tools are expected (.ci/ensure-filesystems.sh installs them):
one missing fails the test rather than hiding that a filesystem was not tested.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

FILESYSTEMS = ("ext4", "xfs", "btrfs")
MKFS_FLAGS = {"ext4": ["-q", "-F"], "xfs": ["-q", "-f"], "btrfs": ["-q", "-f"]}
IMAGE_MIB = 320  # xfs takes no less than 300 MiB; the files are sparse

needs_loop_devices = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("losetup") is None,
    reason="loop-mounted filesystems need root and losetup (util-linux)",
)


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def loop_mounts(folder: Path, filesystems=FILESYSTEMS) -> Iterator[dict[str, str]]:
    """{filesystem: mount point} under ``folder``, unmounted and detached afterwards."""
    mounted: dict[str, str] = {}
    devices: list[str] = []
    try:
        for name in filesystems:
            image = folder / f"{name}.img"
            with open(image, "wb") as file:
                file.truncate(IMAGE_MIB * 1024 * 1024)
            device = sh("losetup", "--find", "--show", str(image))
            devices.append(device)
            sh(f"mkfs.{name}", *MKFS_FLAGS[name], device)
            point = folder / f"on-{name}"
            point.mkdir()
            sh("mount", device, str(point))
            mounted[name] = str(point)
        yield mounted
    finally:
        for point in mounted.values():
            subprocess.run(["umount", point], check=False)
        for device in devices:
            subprocess.run(["losetup", "-d", device], check=False)


def findmnt(directory: str) -> dict[str, str]:
    """What findmnt says of the mount at ``directory``."""
    found = json.loads(sh("findmnt", "-J", "-o", "FSTYPE,OPTIONS,SOURCE", "--mountpoint",
                          directory))["filesystems"][0]  # fmt: skip
    return found


def active_scheduler(device: str) -> str:
    text = Path(f"/sys/block/{os.path.basename(device)}/queue/scheduler").read_text()
    return text.split("[", 1)[1].split("]", 1)[0]


def loops_of(folder: Path) -> list[str]:
    """Loop devices still attached to an image file in ``folder``."""
    listed = sh("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE")
    return [line for line in listed.splitlines() if str(folder) in line]


def mounts_under(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if f" {folder}/" in line]  # fmt: skip


@contextlib.contextmanager
def reachable_folder() -> Iterator[Path]:
    """A new folder under /var/tmp that every user may pass through (mode 755), so that
    a database server's user reaches what a study makes there; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="benchhub-study-test-", dir="/var/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
