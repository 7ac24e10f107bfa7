"""macOS and Windows environment detection, on recorded outputs of those systems' commands
(agents/tests/platform_fixtures/README.md names where each was recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchhub_agent import document
from benchhub_agent.platforms import macos, windows
from test_upload import example

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
