"""macOS and Windows environment detection, on recorded outputs of those systems' commands
(agents/tests/platform_fixtures/README.md names where each was recorded)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from _upload_servers import example
from benchhub_agent import document, sysinfo
from benchhub_agent.platforms import macos, windows

FIXTURES = Path(__file__).parent / "platform_fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def test_macos_hardware_from_sysctl_on_an_apple_m1():
    values = macos.parse_sysctl(fixture("macos-sysctl-m1.txt"))
    assert macos.hardware_from_sysctl(values) == {"cpu": "Apple M1", "cores": 8, "threads": 8}


def test_macos_memory_and_hypervisor_when_sysctl_names_them():
    values = macos.parse_sysctl(
        "hw.memsize: 17179869184\nkern.hv_vmm_present: 1\nhw.physicalcpu: 0\n"
    )
    assert macos.hardware_from_sysctl(values) == {"ram_bytes": 17179869184, "virtualization": "vm"}


def test_macos_version_from_sw_vers():
    assert macos.parse_sw_vers(fixture("macos-sw_vers-10.11.txt")) == {
        "family": "macos",
        "distribution": "Mac OS X",
        "version": "10.11.6",
    }


def test_macos_storage_from_diskutil_info_of_a_fusion_drive():
    assert macos.parse_diskutil_info(fixture("macos-diskutil-info-root.txt")) == {
        "filesystem": "apfs",
        "kind": "nvme",  # solid state over PCI-Express
        "raid": "fusion drive",
    }


def test_windows_hardware_adds_up_both_sockets():
    section = windows.hardware_from_wmic(
        fixture("windows-wmic-cpu-two-sockets.txt"), fixture("windows-wmic-os-memory.txt")
    )
    assert section == {
        "cpu": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
        "cores": 16,
        "threads": 32,
        "ram_bytes": 8309008 * 1024,
    }


def test_windows_hardware_of_a_laptop_without_memory_figures():
    section = windows.hardware_from_wmic(fixture("windows-wmic-cpu-laptop.txt"), "")
    assert section == {"cpu": "Intel(R) Core(TM) i7-4710MQ CPU @ 2.50GHz", "cores": 4, "threads": 8}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "windows-get-physicaldisk-sata-ssd.txt",
            {"kind": "ssd", "device_model": "SAMSUNG MZHPV512HDGL-000H1"},
        ),
        (
            "windows-get-physicaldisk-nvme-surface.txt",
            {"kind": "nvme", "device_model": "SAMSUNG MZFLV256HCHP-000MV"},
        ),
    ],
)
def test_windows_disk_kind_from_get_physicaldisk(name, expected):
    (disk,) = windows.parse_format_list(fixture(name))
    assert windows.storage_from_physical_disk(disk) == expected
    # The wrapped ObjectId is one value; nothing of it became a field of its own.
    assert disk["ObjectId"].endswith('}"') and "PhysicalLocation" in disk


def test_windows_an_hdd_a_hyper_v_disk_and_raw_codes():
    hdd = "MediaType    : HDD\r\nBusType      : SATA\r\nModel        : WDC WD20EZRZ-00Z5HB0\r\n"
    assert windows.storage_from_physical_disk(windows.parse_format_list(hdd)[0]) == {
        "kind": "hdd",
        "device_model": "WDC WD20EZRZ-00Z5HB0",
    }
    # Hyper-V's disks say HDD (Microsoft's Storage Spaces documentation shows them so).
    hyper_v = "FriendlyName : Msft Virtual Disk\nMediaType : HDD\nBusType : SAS\n"
    assert windows.storage_from_physical_disk(windows.parse_format_list(hyper_v)[0]) == {
        "kind": "virtual",
        "device_model": "Msft Virtual Disk",
    }
    # Get-CimInstance MSFT_PhysicalDisk shows the codes: 4 = SSD, 17 = NVMe; 3 = HDD.
    assert windows.storage_from_physical_disk({"MediaType": "4", "BusType": "17"}) == {
        "kind": "nvme"
    }
    assert windows.storage_from_physical_disk({"MediaType": "3", "BusType": "11"}) == {
        "kind": "hdd"
    }
    assert windows.storage_from_physical_disk({"MediaType": "Unspecified"}) == {"kind": "unknown"}


def test_windows_two_disks_are_two_blocks():
    text = (
        fixture("windows-get-physicaldisk-sata-ssd.txt")
        + "\n\n"
        + fixture("windows-get-physicaldisk-nvme-surface.txt")
    )
    blocks = windows.parse_format_list(text)
    assert [b["BusType"] for b in blocks] == ["SATA", "NVMe"]


@pytest.mark.parametrize("text", ["", "\r\n\r\n", "malformedkey=\r\n\r\nName=\r\n"])
def test_empty_or_broken_outputs_give_no_fields_rather_than_wrong_ones(text):
    assert windows.hardware_from_wmic(text, text) == {}
    assert macos.hardware_from_sysctl(macos.parse_sysctl(text)) == {}
    assert macos.parse_diskutil_info(text) == {}
    assert windows.parse_format_list(text) == []


def test_what_the_platforms_report_is_a_valid_document_environment():
    doc = example()
    doc["environment"]["hardware"] = windows.hardware_from_wmic(
        fixture("windows-wmic-cpu-two-sockets.txt"), fixture("windows-wmic-os-memory.txt")
    )
    doc["environment"]["os"] = macos.parse_sw_vers(fixture("macos-sw_vers-10.11.txt"))
    doc["environment"]["storage"] = macos.parse_diskutil_info(
        fixture("macos-diskutil-info-root.txt")
    )
    document.validate(doc)
    (disk,) = windows.parse_format_list(fixture("windows-get-physicaldisk-nvme-surface.txt"))
    doc["environment"]["storage"] = {"filesystem": "ntfs"} | windows.storage_from_physical_disk(
        disk
    )
    document.validate(doc)


@pytest.mark.parametrize("protocol", ["xnet", "named_pipe", "shared_memory"])
def test_windows_local_transports_are_protocols_of_the_vocabulary(protocol):
    doc = example()
    doc["environment"]["client"]["protocol"] = protocol
    document.validate(doc)


# --- Windows without wmic: PowerShell's CIM cmdlets ----------------------------------


def test_windows_hardware_from_cim_of_a_windows_11_laptop():
    assert windows.hardware_from_cim(fixture("windows-cim-win11-laptop.txt")) == {
        "cpu": "12th Gen Intel(R) Core(TM) i7-1260P",
        "cores": 12,
        "threads": 16,
        "ram_bytes": 16870006784,
    }


def test_windows_hardware_from_cim_with_crlf_line_ends():
    text = fixture("windows-cim-core-ultra.txt").replace("\n", "\r\n")
    assert windows.hardware_from_cim(text) == {
        "cpu": "Intel(R) Core(TM) Ultra 5 225U",
        "cores": 12,
        "threads": 14,
        "ram_bytes": 68172009472,
    }


def test_windows_cim_adds_up_both_sockets():
    # Two Win32_Processor blocks, as Format-List writes one per instance; the
    # figures are the two-socket Xeon of the wmic fixture.
    socket = (
        "Name                      : Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz\n"
        "NumberOfCores             : 8\nNumberOfLogicalProcessors : 16\n\n"
    )
    text = socket + socket + "TotalPhysicalMemory : 8508424192\n"
    assert windows.hardware_from_cim(text) == {
        "cpu": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
        "cores": 16,
        "threads": 32,
        "ram_bytes": 8508424192,
    }


@pytest.mark.parametrize(
    ("release", "version", "edition", "expected"),
    [
        ("10", "10.0.26200", "CoreSingleLanguage", "11"),  # Python 3.11 on Windows 11 25H2
        ("10", "10.0.22000", "Professional", "11"),  # the first Windows 11 build
        ("10", "10.0.19045", "Professional", "10"),  # Windows 10 22H2
        ("11", "10.0.22631", "Enterprise", "11"),  # Python 3.12+ names it already
        ("10", "10.0.20348", "ServerDatacenter", "Server 2022"),
        ("10", "10.0.17763", "ServerStandard", "Server 2019"),
        ("10", "10.0.26100", "ServerStandard", "Server 2025"),
        ("2012ServerR2", "6.3.9600", "ServerDatacenter", "2012ServerR2"),
        ("10", "", None, "10"),
    ],
)
def test_windows_release_is_read_from_the_build_number(release, version, edition, expected):
    assert windows.windows_release(release, version, edition) == expected


# --- environment() end to end: recorded outputs through the agent's command runner ----


def fake_commands(directory: Path, outputs: dict[str, str]) -> str:
    """Executables named like the system's commands, printing recorded outputs: the
    agent runs them through its own runner (platforms.output, a real subprocess)."""
    directory.mkdir()
    for name, recorded in outputs.items():
        script = directory / name
        script.write_text(f"#!/bin/sh\nexec /bin/cat '{FIXTURES / recorded}'\n")
        script.chmod(0o755)
    return str(directory)


def test_environment_on_windows_11_without_wmic(tmp_path, monkeypatch):
    path = fake_commands(tmp_path / "bin", {"powershell": "windows-cim-win11-laptop.txt"})
    monkeypatch.setenv("PATH", path)  # no wmic there, as on Windows 11 24H2
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    # What Python 3.11 answers on that machine.
    monkeypatch.setattr(
        platform, "win32_ver", lambda: ("10", "10.0.26200", "SP0", "Multiprocessor Free")
    )
    monkeypatch.setattr(platform, "win32_edition", lambda: "CoreSingleLanguage")

    found = sysinfo.environment()

    assert found == {
        "hardware": {
            "cpu": "12th Gen Intel(R) Core(TM) i7-1260P",
            "cores": 12,
            "threads": 16,
            "ram_bytes": 16870006784,
        },
        "os": {
            "family": "windows",
            "distribution": "Windows 11",
            "version": "10.0.26200",
            "kernel": "10.0.26200",
        },
    }
    doc = example()
    doc["environment"] |= found
    document.validate(doc)


def test_environment_on_windows_prefers_wmic_where_it_is(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    path = fake_commands(bin_dir, {"powershell": "windows-cim-win11-laptop.txt"})
    # wmic answers its two queries from the two recorded files.
    (bin_dir / "wmic").write_text(
        '#!/bin/sh\ncase "$1" in\n'
        f"  cpu) exec /bin/cat '{FIXTURES / 'windows-wmic-cpu-two-sockets.txt'}' ;;\n"
        f"  *) exec /bin/cat '{FIXTURES / 'windows-wmic-os-memory.txt'}' ;;\nesac\n"
    )
    (bin_dir / "wmic").chmod(0o755)
    monkeypatch.setenv("PATH", path)
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setattr(
        platform, "win32_ver", lambda: ("10", "10.0.19045", "SP0", "Multiprocessor Free")
    )
    monkeypatch.setattr(platform, "win32_edition", lambda: "Professional")

    found = sysinfo.environment()

    assert found["hardware"] == {
        "cpu": "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz",
        "cores": 16,
        "threads": 32,
        "ram_bytes": 8309008 * 1024,
    }
    assert found["os"]["distribution"] == "Windows 10"


def test_environment_on_macos(tmp_path, monkeypatch):
    path = fake_commands(
        tmp_path / "bin",
        {
            "sysctl": "macos-sysctl-m1.txt",
            "sw_vers": "macos-sw_vers-10.11.txt",
            "diskutil": "macos-diskutil-info-root.txt",
        },
    )
    monkeypatch.setenv("PATH", path)  # not Linux's own sysctl
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "release", lambda: "15.6.0")

    found = sysinfo.environment(str(tmp_path))

    assert found == {
        "hardware": {"cpu": "Apple M1", "cores": 8, "threads": 8},
        "os": {"family": "macos", "distribution": "Mac OS X", "version": "10.11.6",
               "kernel": "15.6.0"},
        "storage": {"filesystem": "apfs", "kind": "nvme", "raid": "fusion drive"},
    }  # fmt: skip
    doc = example()
    doc["environment"] |= found
    document.validate(doc)


def test_a_missing_command_leaves_its_section_out_rather_than_failing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_commands(tmp_path / "bin", {}))  # neither wmic nor powershell
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setattr(
        platform, "win32_ver", lambda: ("10", "10.0.22631", "SP0", "Multiprocessor Free")
    )
    monkeypatch.setattr(platform, "win32_edition", lambda: "Professional")
    assert sysinfo.environment() == {
        "os": {"family": "windows", "distribution": "Windows 11", "version": "10.0.22631",
               "kernel": "10.0.22631"},
    }  # fmt: skip
