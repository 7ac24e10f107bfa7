"""What machine a benchmark ran on: the document's hardware, os and storage sections.

Linux is read from /proc and /sys without running anything but the optional
``systemd-detect-virt``; other systems get what the standard library knows.
Every reader degrades to "absent" rather than failing: a missing field is
better than a wrong one or a crash.

Deliberately never read or sent: host names, serial numbers, IP addresses,
user names, mount sources (they can hold all of those).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import platforms

SYS_BLOCK = Path("/sys/block")

# /sys/class/dmi/id/sys_vendor → virtualization, when systemd-detect-virt is absent.
DMI_VENDORS = {
    "qemu": "kvm",
    "vmware": "vmware",
    "microsoft corporation": "microsoft",
    "xen": "xen",
    "innotek": "oracle",
    "parallels": "parallels",
    "amazon ec2": "amazon",
    "google": "google",
}

# Mount options that carry an address or a user name (NFS, CIFS): never sent.
PRIVATE_MOUNT_OPTIONS = frozenset(
    {"addr", "clientaddr", "mountaddr", "mounthost", "username", "user", "domain", "password",
     "credentials", "ip", "server", "nodename"}
)  # fmt: skip

# Paravirtual disks: the guest cannot know what is behind them.
VIRTUAL_DISK_PREFIXES = ("vd", "xvd")


def read_text(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


# --- hardware ---------------------------------------------------------------


def cpu_info(cpuinfo: str | None = None) -> dict[str, Any]:
    """Model name, physical cores and hardware threads."""
    text = cpuinfo if cpuinfo is not None else read_text("/proc/cpuinfo") or ""
    model = None
    cores: set[tuple[str, str]] = set()
    processors = 0
    physical = core = None
    for line in [*text.splitlines(), ""]:
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            processors += 1
        elif key in ("model name", "Model", "cpu model", "Hardware") and model is None:
            model = value
        elif key == "physical id":
            physical = value
        elif key == "core id":
            core = value
        elif not key:  # blank line ends one processor's block
            if core is not None:
                cores.add((physical or "0", core))
            physical = core = None
    threads = processors or os.cpu_count() or None
    info: dict[str, Any] = {}
    model = model or platform.processor() or None
    if model:
        info["cpu"] = re.sub(r"\s+", " ", model)[:500]
    if threads:
        info["threads"] = threads
        info["cores"] = len(cores) if cores else threads
    return info


def ram_bytes() -> int | None:
    meminfo = read_text("/proc/meminfo")
    if meminfo:
        match = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.MULTILINE)
        if match:
            return int(match.group(1)) * 1024
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


@functools.cache
def hypervisor() -> str:
    return _detect_virt("--vm") or _vm_from_firmware()


@functools.cache
def container() -> str:
    return _detect_virt("--container") or _container_from_markers()


def virtualization() -> str:
    """The hypervisor if any (it decides what storage and CPU figures mean), else the
    container engine, else "none"."""
    if hypervisor() != "none":
        return hypervisor()
    return container()


def _detect_virt(flag: str) -> str | None:
    tool = shutil.which("systemd-detect-virt")
    if not tool:
        return None
    try:
        done = subprocess.run(  # noqa: S603 — fixed arguments, tool found on PATH
            [tool, flag], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _vm_from_firmware() -> str:
    vendor = (read_text("/sys/class/dmi/id/sys_vendor") or "").lower()
    for marker, name in DMI_VENDORS.items():
        if marker in vendor:
            return name
    flags = read_text("/proc/cpuinfo") or ""
    if re.search(r"^flags\s*:.*\bhypervisor\b", flags, re.MULTILINE):
        return "vm-other"
    return "none"


def _container_from_markers() -> str:
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    # systemd's container interface spells it in lower case.
    engine = os.environ.get("container")  # noqa: SIM112
    if engine:
        return engine[:40]
    cgroup = read_text("/proc/1/cgroup") or ""
    for marker in ("docker", "kubepods", "lxc", "containerd"):
        if marker in cgroup:
            return marker
    return "none"


def hardware() -> dict[str, Any]:
    section = cpu_info()
    ram = ram_bytes()
    if ram:
        section["ram_bytes"] = ram
    section["virtualization"] = virtualization()
    return section


# --- operating system ---------------------------------------------------------


def os_release(text: str | None = None) -> dict[str, str]:
    text = text if text is not None else read_text("/etc/os-release") or ""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def operating_system() -> dict[str, Any]:
    system = platform.system().lower()
    family = {"linux": "linux", "windows": "windows", "freebsd": "freebsd", "darwin": "macos"}
    section: dict[str, Any] = {"family": family.get(system, "other")}
    if system == "linux":
        release = os_release()
        if release.get("NAME"):
            section["distribution"] = release["NAME"]
        if release.get("VERSION_ID"):
            section["version"] = release["VERSION_ID"]
    elif system == "darwin":
        section["distribution"] = "macOS"
        section["version"] = platform.mac_ver()[0]
    elif system == "windows":
        section["distribution"] = f"Windows {platform.release()}"
        section["version"] = platform.version()
    else:
        section["distribution"] = platform.system()
        section["version"] = platform.release()
    section["kernel"] = platform.release()
    return {k: v for k, v in section.items() if v}


# --- storage ------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    mount_point: str
    device: str  # major:minor
    fstype: str
    options: list[str]
    source: str


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 6 or len(tail) < 3:
            continue
        options = fields[5].split(",") + [o for o in tail[2].split(",") if o]
        mounts.append(Mount(_unescape(fields[4]), fields[2], tail[0], options, tail[1]))
    return mounts


def mount_for(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount a path lives on: the longest mount point that is a prefix of it.

    Later lines win ties, because a later mount on the same point hides the earlier.
    """
    best: Mount | None = None
    for mount in mounts:
        point = mount.mount_point.rstrip("/") or "/"
        inside = point == "/" or path == point or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = mount
    return best


def public_mount_options(options: list[str]) -> list[str]:
    kept = []
    for option in options:
        if option.split("=", 1)[0].lower() in PRIVATE_MOUNT_OPTIONS:
            continue
        if option not in kept:
            kept.append(option)
    return sorted(kept)


def block_device(mount: Mount) -> str | None:
    """The kernel name of the whole disk under a mount (sda, nvme0n1, dm-0, md0)."""
    link = Path("/sys/dev/block") / mount.device
    if not link.exists() and mount.source.startswith("/dev/"):
        # btrfs and some others show an anonymous device number: ask the source node.
        try:
            rdev = os.stat(mount.source).st_rdev
            link = Path("/sys/dev/block") / f"{os.major(rdev)}:{os.minor(rdev)}"
        except OSError:
            return None
    try:
        real = link.resolve(strict=True)
    except OSError:
        return None
    if (real / "partition").exists():
        real = real.parent
    return real.name


def scheduler(disk: str) -> str | None:
    text = read_text(SYS_BLOCK / disk / "queue" / "scheduler")
    if not text:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text.split()[0]


def raid_level(disk: str) -> str:
    level = read_text(SYS_BLOCK / disk / "md" / "level")
    if level:
        return level
    dm_uuid = read_text(SYS_BLOCK / disk / "dm" / "uuid")
    if dm_uuid is not None:
        if dm_uuid.startswith("LVM-"):
            return "lvm"
        if dm_uuid.startswith("CRYPT-"):
            return "dm-crypt"
        return "device-mapper"
    return "none"


def physical_disks(disk: str, depth: int = 0) -> list[str]:
    """The disks under an md/dm device (itself when it is one)."""
    slaves = SYS_BLOCK / disk / "slaves"
    try:
        names = sorted(os.listdir(slaves))
    except OSError:
        names = []
    if not names or depth > 5:
        return [disk]
    found = []
    for name in names:
        if (SYS_BLOCK / name).exists():
            found.extend(physical_disks(name, depth + 1))
        else:  # a partition: its disk is the directory holding it
            parent = (slaves / name).resolve().parent.name
            found.extend(physical_disks(parent, depth + 1))
    return found


def disk_kind(disk: str, virtual_machine: bool) -> str:
    if disk.startswith(VIRTUAL_DISK_PREFIXES):
        return "virtual"
    if virtual_machine:
        return "unknown"  # a hypervisor reports rotational=1 for whatever it likes
    if disk.startswith("nvme"):
        return "nvme"
    rotational = read_text(SYS_BLOCK / disk / "queue" / "rotational")
    if rotational == "1":
        return "hdd"
    if rotational == "0":
        return "ssd"
    return "unknown"


def disk_model(disk: str) -> str | None:
    model = read_text(SYS_BLOCK / disk / "device" / "model")
    return re.sub(r"\s+", " ", model)[:500] if model else None


def storage(path: str) -> dict[str, Any]:
    """Filesystem, mount options and disk behind ``path`` (Linux; {} elsewhere)."""
    mountinfo = read_text("/proc/self/mountinfo")
    if not mountinfo:
        return {}
    mount = mount_for(os.path.realpath(path), parse_mountinfo(mountinfo))
    if mount is None:
        return {}
    section: dict[str, Any] = {
        "filesystem": mount.fstype,
        "mount_options": public_mount_options(mount.options),
    }
    disk = block_device(mount)
    if disk is None:
        return section
    section["raid"] = raid_level(disk)
    under = physical_disks(disk)[0]
    section["kind"] = disk_kind(under, hypervisor() != "none")
    model = disk_model(under)
    if model:
        section["device_model"] = model
    io_scheduler = scheduler(under) or scheduler(disk)
    if io_scheduler:
        section["io_scheduler"] = io_scheduler
    return section


# --- all of it ----------------------------------------------------------------


def environment(storage_path: str | None = None) -> dict[str, Any]:
    """The document's hardware, os and (for a path) storage sections."""
    other = platforms.for_this_system()
    if other is not None:  # macOS, Windows: their own sources
        sections = {"hardware": other.hardware(), "os": other.operating_system()}
        found = other.storage(storage_path) if storage_path else {}
        if found:
            sections["storage"] = found
        return {name: section for name, section in sections.items() if section}
    hw = hardware()
    sections: dict[str, Any] = {"hardware": hw, "os": operating_system()}
    if storage_path and platform.system() == "Linux":
        found = storage(storage_path)
        if found:
            sections["storage"] = found
    return sections


def format_table(sections: dict[str, Any]) -> str:
    rows = []
    for section, fields in sections.items():
        for name, value in fields.items():
            shown = ",".join(value) if isinstance(value, list) else value
            rows.append((section, name, str(shown)))
    width_section = max((len(r[0]) for r in rows), default=0)
    width_name = max((len(r[1]) for r in rows), default=0)
    return "\n".join(f"{s:<{width_section}}  {n:<{width_name}}  {v}" for s, n, v in rows)
