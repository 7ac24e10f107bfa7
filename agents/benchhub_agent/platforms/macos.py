"""macOS: sysctl for the CPU, memory and hypervisor; sw_vers; diskutil for the storage."""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from . import output

SYSCTL_KEYS = (
    "machdep.cpu.brand_string",
    "hw.physicalcpu",
    "hw.logicalcpu",
    "hw.memsize",
    "kern.hv_vmm_present",
)


def parse_sysctl(text: str) -> dict[str, str]:
    """``sysctl name …`` prints ``name: value`` lines."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            found[name.strip()] = value.strip()
    return found


def hardware_from_sysctl(values: dict[str, str]) -> dict[str, Any]:
    section: dict[str, Any] = {}
    if values.get("machdep.cpu.brand_string"):
        section["cpu"] = values["machdep.cpu.brand_string"]
    for field, names in (
        ("cores", ("hw.physicalcpu", "machdep.cpu.core_count")),
        ("threads", ("hw.logicalcpu", "machdep.cpu.thread_count", "hw.ncpu")),
        ("ram_bytes", ("hw.memsize",)),
    ):
        number = next((values[n] for n in names if values.get(n, "").isdigit()), None)
        if number is not None and int(number) > 0:
            section[field] = int(number)
    hypervisor = values.get("kern.hv_vmm_present")
    if hypervisor in ("0", "1"):
        section["virtualization"] = "vm" if hypervisor == "1" else "none"
    return section


def parse_sw_vers(text: str) -> dict[str, Any]:
    values = parse_sysctl(text)  # the same "Name:<tab>value" lines
    section: dict[str, Any] = {"family": "macos"}
    if values.get("ProductName"):
        section["distribution"] = values["ProductName"]
    if values.get("ProductVersion"):
        section["version"] = values["ProductVersion"]
    return section


def parse_diskutil_info(text: str) -> dict[str, Any]:
    values = parse_sysctl(text)
    section: dict[str, Any] = {}
    personality = values.get("File System Personality") or values.get("Type (Bundle)")
    if personality:
        section["filesystem"] = personality.lower()
    solid = values.get("Solid State", "").lower()
    protocol = values.get("Protocol", "")
    if solid == "yes":
        section["kind"] = "nvme" if re.search(r"PCI|Apple Fabric|NVMe", protocol) else "ssd"
    elif solid == "no":
        section["kind"] = "hdd"
    elif protocol == "Disk Image" or values.get("Virtual") == "Yes":
        section["kind"] = "virtual"
    if values.get("Fusion Drive") == "Yes":
        section["raid"] = "fusion drive"
    elif values.get("APFS Physical Store"):
        section["raid"] = "none"
    if values.get("Device / Media Name"):
        section["device_model"] = values["Device / Media Name"]
    return section


def hardware() -> dict[str, Any]:
    return hardware_from_sysctl(parse_sysctl(output(["sysctl", *SYSCTL_KEYS])))


def operating_system() -> dict[str, Any]:
    section = parse_sw_vers(output(["sw_vers"]))
    section["kernel"] = platform.release()
    return section


def storage(path: str) -> dict[str, Any]:
    return parse_diskutil_info(output(["diskutil", "info", os.path.realpath(path)]))
