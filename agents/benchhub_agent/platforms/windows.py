"""Windows: WMI for the CPU and memory — through wmic, or through PowerShell's CIM
cmdlets (Get-CimInstance) where wmic is gone (Windows 11 24H2 no longer ships it);
the Windows API for the filesystem and PowerShell's storage module (Get-Partition,
Get-PhysicalDisk) for the kind of disk."""

from __future__ import annotations

import os
import platform
from typing import Any

from . import output


def parse_wmic_list(text: str) -> list[dict[str, str]]:
    """``wmic … /format:list``: ``Key=Value`` lines, one blank-separated block per instance."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.replace("\r", "").split("\n"):
        key, sep, value = line.partition("=")
        if sep and key.strip():
            current[key.strip()] = value.strip()
        elif current:
            blocks.append(current)
            current = {}
    if current:
        blocks.append(current)
    return blocks


def hardware_from_wmic(cpu_text: str, os_text: str) -> dict[str, Any]:
    """Win32_Processor (one block per socket) and Win32_OperatingSystem."""
    sockets = [b for b in parse_wmic_list(cpu_text) if b.get("Name")]
    section: dict[str, Any] = {}
    if sockets:
        section["cpu"] = sockets[0]["Name"]
        for field, key in (("cores", "NumberOfCores"), ("threads", "NumberOfLogicalProcessors")):
            counts = [int(b[key]) for b in sockets if b.get(key, "").isdigit()]
            if counts and sum(counts) > 0:
                section[field] = sum(counts)
    memory = next((b for b in parse_wmic_list(os_text) if b.get("TotalVisibleMemorySize")), None)
    if memory and memory["TotalVisibleMemorySize"].isdigit():
        section["ram_bytes"] = int(memory["TotalVisibleMemorySize"]) * 1024  # WMI counts kB
    return section


# One PowerShell start (about a second) for the three WMI classes; Format-List
# writes one "Name : value" block per instance, told apart by their fields.
CIM_SCRIPT = (
    "Get-CimInstance Win32_Processor | Format-List Name,NumberOfCores,NumberOfLogicalProcessors; "
    "Get-CimInstance Win32_ComputerSystem | Format-List TotalPhysicalMemory; "
    "Get-CimInstance Win32_OperatingSystem | Format-List Caption,Version,BuildNumber"
)


def cim_command() -> list[str]:
    return ["powershell", "-NoProfile", "-NonInteractive", "-Command", CIM_SCRIPT]


def hardware_from_cim(text: str) -> dict[str, Any]:
    """Win32_Processor blocks (one per socket) and Win32_ComputerSystem's
    TotalPhysicalMemory (bytes), from Get-CimInstance … | Format-List."""
    blocks = parse_format_list(text)
    sockets = [b for b in blocks if b.get("Name") and "NumberOfCores" in b]
    section: dict[str, Any] = {}
    if sockets:
        section["cpu"] = " ".join(sockets[0]["Name"].split())[:500]
        for field, key in (("cores", "NumberOfCores"), ("threads", "NumberOfLogicalProcessors")):
            counts = [int(b[key]) for b in sockets if b.get(key, "").isdigit()]
            if counts and sum(counts) > 0:
                section[field] = sum(counts)
    memory = next((b["TotalPhysicalMemory"] for b in blocks if "TotalPhysicalMemory" in b), "")
    if memory.isdigit() and int(memory) > 0:
        section["ram_bytes"] = int(memory)
    return section


def hardware() -> dict[str, Any]:
    cpu = output(
        ["wmic", "cpu", "get", "Name,NumberOfCores,NumberOfLogicalProcessors", "/format:list"]
    )
    if cpu:
        memory = output(["wmic", "os", "get", "TotalVisibleMemorySize", "/format:list"])
        return hardware_from_wmic(cpu, memory)
    return hardware_from_cim(output(cim_command()))


# Build numbers where a release begins: Windows 11 and each Server since 2016 keep
# the version 10.0, so the build tells them apart (Python 3.11's win32_ver()
# calls Windows 11 "10", and every Server of these "10" too).
WINDOWS_11_FIRST_BUILD = 22000
SERVER_FIRST_BUILDS = ((26100, "2025"), (20348, "2022"), (17763, "2019"), (14393, "2016"))


def windows_release(release: str, version: str, edition: str | None) -> str:
    """The release name from ``platform.win32_ver()``'s release and version
    ("10", "10.0.26200") and ``platform.win32_edition()`` ("Professional",
    "ServerDatacenter"), whichever Python gave them."""
    parts = version.split(".")
    build = int(parts[2]) if len(parts) >= 3 and parts[2].isdigit() else None
    if build is not None and parts[0] == "10":
        if edition and "server" in edition.lower():
            return next((f"Server {name}" for first, name in SERVER_FIRST_BUILDS
                         if build >= first), release)  # fmt: skip
        if build >= WINDOWS_11_FIRST_BUILD:
            return "11"
    return release


def operating_system() -> dict[str, Any]:
    release, version, _, _ = platform.win32_ver()
    try:
        edition = platform.win32_edition()
    except (AttributeError, OSError):
        edition = None
    name = windows_release(release, version, edition)
    section = {"family": "windows", "distribution": f"Windows {name}".strip()}
    if version:
        section["version"] = version
        section["kernel"] = version
    return {k: v for k, v in section.items() if v}


def parse_format_list(text: str) -> list[dict[str, str]]:
    """PowerShell's ``Format-List``: ``Name : value`` lines, one blank-separated block per
    object; a long value wraps onto indented lines (or, in a narrow console, unindented
    ones without a separator), which belong to the value above."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = ""
    for line in text.replace("\r", "").split("\n"):
        if not line.strip():
            if current:
                blocks.append(current)
                current, last = {}, ""
            continue
        name, sep, value = line.partition(" : ")
        if not sep and line.rstrip().endswith(" :"):  # an empty value
            name, sep, value = line.rstrip()[:-2], " :", ""
        if sep and name.strip() and not line[0].isspace() and " " not in name.strip():
            last = name.strip()
            current[last] = value.strip()
        elif last:
            current[last] += line.strip()
    if current:
        blocks.append(current)
    return blocks


# MSFT_PhysicalDisk's numeric codes, for output that shows them raw (Get-CimInstance).
MEDIA_TYPES = {"0": "Unspecified", "3": "HDD", "4": "SSD", "5": "SCM"}
BUS_TYPES = {"14": "Virtual", "15": "File Backed Virtual", "17": "NVMe"}
VIRTUAL_BUSES = {"Virtual", "File Backed Virtual"}


def storage_from_physical_disk(fields: dict[str, str]) -> dict[str, Any]:
    """The storage section's disk fields from one MSFT_PhysicalDisk (Get-PhysicalDisk):
    ``kind`` from MediaType and BusType, and the model. A hypervisor's disk (virtual bus,
    or Hyper-V's "Msft Virtual Disk", which may call itself an HDD) is ``virtual``."""
    media = MEDIA_TYPES.get(fields.get("MediaType", ""), fields.get("MediaType", ""))
    bus = BUS_TYPES.get(fields.get("BusType", ""), fields.get("BusType", ""))
    model = fields.get("Model") or fields.get("FriendlyName") or ""
    section: dict[str, Any] = {}
    if bus in VIRTUAL_BUSES or "virtual disk" in model.lower():
        section["kind"] = "virtual"
    elif media in ("SSD", "SCM"):
        section["kind"] = "nvme" if bus == "NVMe" else "ssd"
    elif media == "HDD":
        section["kind"] = "hdd"
    elif bus == "NVMe":  # no media type reported, but NVMe is solid state
        section["kind"] = "nvme"
    elif fields:
        section["kind"] = "unknown"
    if model.strip():
        section["device_model"] = " ".join(model.split())[:500]
    return section


def physical_disk_command(drive_letter: str) -> list[str]:
    """The disk holding a drive letter's partition, all its MSFT_PhysicalDisk fields."""
    script = (
        f"$n = (Get-Partition -DriveLetter {drive_letter}).DiskNumber; "
        "Get-PhysicalDisk | Where-Object DeviceId -eq $n | Format-List *"
    )
    return ["powershell", "-NoProfile", "-NonInteractive", "-Command", script]


def storage(path: str) -> dict[str, Any]:
    """The filesystem of the volume ``path`` is on (NTFS, ReFS, …) from GetVolumeInformationW,
    and the kind of disk under it from Get-PhysicalDisk."""
    import ctypes

    drive = os.path.splitdrive(os.path.realpath(path))[0]
    section: dict[str, Any] = {}
    name = ctypes.create_unicode_buffer(64)
    windll = getattr(ctypes, "windll", None)  # Windows only
    found = windll and windll.kernel32.GetVolumeInformationW(
        drive + "\\", None, 0, None, None, None, name, len(name)
    )
    if found and name.value:
        section["filesystem"] = name.value.lower()
    letter = drive.rstrip(":")
    if len(letter) == 1 and letter.isalpha():  # not a UNC share: no disk of ours
        disks = parse_format_list(output(physical_disk_command(letter)))
        if disks:
            section.update(storage_from_physical_disk(disks[0]))
    return section
