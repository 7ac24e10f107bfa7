"""``--format-scratch IMAGE_DIR``: filesystems made for the study on loop devices.

Each filesystem is an image file in IMAGE_DIR (sparse: it takes the space its
data takes), attached to a loop device, formatted and mounted on
IMAGE_DIR/<filesystem>; all of it is unmounted, detached and removed
afterwards, in that order, by the study's :class:`~.machine.Changes`.
"""

from __future__ import annotations

import os
import shutil

from .machine import Changes, StudyError, command, is_root

# The Debian package each mkfs comes with, to name in the refusal when it is missing.
MKFS_PACKAGES = {
    "ext2": "e2fsprogs",
    "ext3": "e2fsprogs",
    "ext4": "e2fsprogs",
    "xfs": "xfsprogs",
    "btrfs": "btrfs-progs",
    "f2fs": "f2fs-tools",
    "nilfs2": "nilfs-tools",
    "jfs": "jfsutils",
    "reiserfs": "reiserfsprogs",
    "vfat": "dosfstools",
}
# How each mkfs is told to format a device that already holds something, and quietly.
MKFS_FLAGS = {
    "ext2": ["-q", "-F"],
    "ext3": ["-q", "-F"],
    "ext4": ["-q", "-F"],
    "xfs": ["-q", "-f"],
    "btrfs": ["-q", "-f"],
    "f2fs": ["-q", "-f"],
}
DEFAULT_SIZE_MIB = 1024
MIN_SIZE_MIB = 320  # xfs refuses less than 300 MiB


def check(image_dir: str, filesystems: list[str], size_mib: int) -> None:
    """Everything refused before anything is made: not root, a missing mkfs, a bad size."""
    if not is_root():
        raise StudyError(
            "--format-scratch attaches loop devices, formats and mounts them: it needs root"
        )
    if size_mib < MIN_SIZE_MIB:
        raise StudyError(f"--scratch-size: at least {MIN_SIZE_MIB} MiB (xfs needs 300)")
    for tool in ("losetup", "mount", "umount"):
        if shutil.which(tool) is None:
            raise StudyError(f"--format-scratch: {tool} not found: install util-linux")
    for name in filesystems:
        if shutil.which(f"mkfs.{name}") is None:
            package = MKFS_PACKAGES.get(name)
            install = (
                f"install {package} (apt-get install {package})"
                if package
                else (f"install the package that has mkfs.{name}")
            )
            raise StudyError(f"--format-scratch: mkfs.{name} not found: {install}")
    if os.path.exists(image_dir) and not os.path.isdir(image_dir):
        raise StudyError(f"--format-scratch: {image_dir} is not a directory")
    taken = [name for name in filesystems if os.path.exists(os.path.join(image_dir, name))]
    if taken:
        raise StudyError(
            f"--format-scratch: {os.path.join(image_dir, taken[0])} exists already; the agent "
            "mounts its filesystems on IMAGE_DIR/<filesystem> and uses nothing it did not make"
        )


def make(image_dir: str, filesystems: list[str], size_mib: int, changes: Changes) -> list[str]:
    """The mount points, one per filesystem, each registered with ``changes`` to undo."""
    with changes.made() as register:
        if not os.path.isdir(image_dir):
            os.makedirs(image_dir)
            register(f"remove {image_dir}", "rmdir", path=image_dir)
    points = []
    for name in filesystems:
        image = os.path.join(image_dir, f"benchhub-{name}.img")
        point = os.path.join(image_dir, name)
        with changes.made() as register:
            with open(image, "xb") as file:
                file.truncate(size_mib * 1024 * 1024)
            register(f"remove {image}", "unlink", path=image)
        with changes.made() as register:
            device = command("losetup", "--find", "--show", image)
            register(f"detach {device}", "detach", device=device)
        command(f"mkfs.{name}", *MKFS_FLAGS.get(name, []), device)
        with changes.made() as register:
            os.mkdir(point)
            register(f"remove {point}", "rmdir", path=point)
        with changes.made() as register:
            command("mount", device, point)
            register(f"unmount {point}", "unmount", point=point)
        points.append(point)
    return points
