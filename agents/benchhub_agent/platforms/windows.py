"""Windows: WMI (through wmic) for the CPU and memory, the Windows API for the storage."""

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


def hardware() -> dict[str, Any]:
    cpu = output(
        ["wmic", "cpu", "get", "Name,NumberOfCores,NumberOfLogicalProcessors", "/format:list"]
    )
    memory = output(["wmic", "os", "get", "TotalVisibleMemorySize", "/format:list"])
    return hardware_from_wmic(cpu, memory)


def operating_system() -> dict[str, Any]:
    release, version, _, _ = platform.win32_ver()
    section = {"family": "windows", "distribution": f"Windows {release}".strip()}
    if version:
        section["version"] = version
        section["kernel"] = version
    return {k: v for k, v in section.items() if v}


def storage(path: str) -> dict[str, Any]:
    """The filesystem of the volume ``path`` is on (NTFS, ReFS, …) from GetVolumeInformationW."""
    import ctypes

    root = os.path.splitdrive(os.path.realpath(path))[0] + "\\"
    name = ctypes.create_unicode_buffer(64)
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    ok = kernel32.GetVolumeInformationW(root, None, 0, None, None, None, name, len(name))
    return {"filesystem": name.value.lower()} if ok and name.value else {}
