"""Environment detection on this machine, and the parsers on text captured from real ones."""

from __future__ import annotations

import getpass
import json
import os
import platform
import re
import shutil
import socket
import subprocess

from benchhub_agent import sysinfo
from benchhub_contract.schema import validation_errors

DUAL_SOCKET_HT = """\
processor\t: 0
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
physical id\t: 0
core id\t\t: 0

processor\t: 1
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
physical id\t: 0
core id\t\t: 0

processor\t: 2
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
physical id\t: 1
core id\t\t: 0

processor\t: 3
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
physical id\t: 1
core id\t\t: 0
"""

MOUNTINFO = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
40 27 8:17 / /var/lib/post rw,noatime - xfs /dev/sdb1 rw,attr2,inode64
41 27 8:33 / /var/lib/postgresql rw,noatime,nodiratime - ext4 /dev/sdc1 rw,data=ordered
42 27 0:50 / /mnt/my\\040disk rw - nfs4 srv:/x rw,vers=4.2,addr=10.1.2.3,clientaddr=10.1.2.4
"""


def test_this_machine_is_described_with_the_schema_names():
    sections = sysinfo.environment("/")
    hardware, os_section, storage = sections["hardware"], sections["os"], sections["storage"]
    assert hardware["threads"] == os.cpu_count()
    assert 1 <= hardware["cores"] <= hardware["threads"]
    assert hardware["ram_bytes"] > 256 * 1024 * 1024
    assert hardware["cpu"]
    assert hardware["virtualization"]
    assert os_section["family"] == "linux"
    assert os_section["kernel"] == platform.release()
    expected_fs = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", "/"], capture_output=True, text=True
    ).stdout.strip()
    assert storage["filesystem"] == expected_fs
    assert storage["kind"] in ("hdd", "ssd", "nvme", "virtual", "unknown")
    document = {"schema": 1, "uuid": "00000000-0000-4000-8000-000000000000",
                "source": {"kind": "agent"}, "environment": sections,
                "runs": [{"benchmark": "select-update",
                          "measurements": [{"metric": "throughput", "value": 1}]}]}  # fmt: skip
    assert validation_errors(document) == []


def test_the_io_scheduler_is_the_bracketed_one():
    sections = sysinfo.environment("/")
    scheduler = sections["storage"].get("io_scheduler")
    disks = [d for d in os.listdir("/sys/block") if not d.startswith(("loop", "zram", "ram"))]
    texts = [sysinfo.read_text(f"/sys/block/{d}/queue/scheduler") or "" for d in disks]
    if scheduler is not None:
        assert any(f"[{scheduler}]" in t or t == scheduler for t in texts)


def test_no_host_name_or_user_name_leaves_the_machine():
    output = json.dumps(sysinfo.environment("/"))
    # As a word: a short host name ("vm") may well be part of "kvm".
    assert not re.search(rf"\b{re.escape(socket.gethostname())}\b", output)
    values = [v for section in json.loads(output).values() for v in section.values()]
    assert getpass.getuser() not in values


def test_sysinfo_command_prints_json_with_the_same_sections():
    agent = shutil.which("benchhub-agent") or os.path.join(
        os.path.dirname(os.sys.executable), "benchhub-agent"
    )
    done = subprocess.run([agent, "sysinfo", "--json"], capture_output=True, text=True, check=True)
    assert set(json.loads(done.stdout)) == {"hardware", "os", "storage"}
    table = subprocess.run([agent, "sysinfo"], capture_output=True, text=True, check=True).stdout
    assert "virtualization" in table and "kernel" in table


def test_cores_count_physical_cores_not_hyperthreads():
    info = sysinfo.cpu_info(DUAL_SOCKET_HT)
    assert info == {"cpu": "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "threads": 4, "cores": 2}


def test_the_longest_mount_point_prefix_wins_on_whole_components():
    mounts = sysinfo.parse_mountinfo(MOUNTINFO)
    assert sysinfo.mount_for("/var/lib/postgresql/15/main", mounts).fstype == "ext4"
    assert sysinfo.mount_for("/var/lib/postgresql/15/main", mounts).device == "8:33"
    assert sysinfo.mount_for("/var/lib/post", mounts).fstype == "xfs"
    assert sysinfo.mount_for("/var/lib/postgres", mounts).mount_point == "/"
    assert sysinfo.mount_for("/mnt/my disk/db", mounts).fstype == "nfs4"


def test_mount_options_join_both_lists_and_drop_addresses():
    mounts = sysinfo.parse_mountinfo(MOUNTINFO)
    assert sysinfo.public_mount_options(mounts[2].options) == [
        "data=ordered", "noatime", "nodiratime", "rw"
    ]  # fmt: skip
    nfs = sysinfo.public_mount_options(mounts[3].options)
    assert not any("10.1.2" in option for option in nfs)
    assert "vers=4.2" in nfs


def test_os_release_fields():
    text = 'NAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
    assert sysinfo.os_release(text)["NAME"] == "Debian GNU/Linux"
    assert sysinfo.os_release(text)["VERSION_ID"] == "12"
