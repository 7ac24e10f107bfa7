"""Normalization tables: raw strings as machines and people print them."""

import pytest

from benchhub.results.normalization import (
    UnknownEngineError,
    normalize_cpu,
    normalize_distribution,
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_mount_options,
    normalize_virtualization,
    parse_server_version,
)


@pytest.mark.parametrize(
    ("raw", "vendor", "model"),
    [
        ("AMD Athlon(tm) 64 X2 Dual Core Processor 5200+", "amd", "Athlon 64 X2 5200+"),
        ("AMD Athlon 64 X2 5200+", "amd", "Athlon 64 X2 5200+"),
        ("AMD Ryzen 7 5800X 8-Core Processor", "amd", "Ryzen 7 5800X"),
        ("AMD Ryzen 7 PRO 4750U with Radeon Graphics", "amd", "Ryzen 7 PRO 4750U"),
        ("AMD EPYC 7763 64-Core Processor", "amd", "EPYC 7763"),
        ("AMD Opteron(tm) Processor 6174", "amd", "Opteron 6174"),
        ("AMD Phenom(tm) II X4 965 Processor", "amd", "Phenom II X4 965"),
        ("Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz", "intel", "Core i7-8700K"),
        ("Intel(R) Core(TM)2 Duo CPU     E8400  @ 3.00GHz", "intel", "Core 2 Duo E8400"),
        ("Intel Core 2 Duo E8400", "intel", "Core 2 Duo E8400"),
        ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "intel", "Xeon E5-2680 v4"),
        ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "intel", "Xeon Platinum 8375C"),
        ("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "intel", "11th Gen Core i7-1165G7"),
        # Without '@' the clock is the only thing that tells Pentium 4s apart.
        ("Intel(R) Pentium(R) 4 CPU 3.00GHz", "intel", "Pentium 4 3.00GHz"),
        ("Intel(R) Celeron(R) CPU J1900 @ 1.99GHz", "intel", "Celeron J1900"),
        ("GenuineIntel", "intel", ""),
        ("Apple M2 Pro", "apple", "M2 Pro"),
        ("Neoverse-N1", "arm", "Neoverse-N1"),
        ("QEMU Virtual CPU version 2.5+", "virtual", "QEMU Virtual version 2.5+"),
        ("Intel Core2 Quad CPU Q6600 @ 2.40GHz", "intel", "Core 2 Quad Q6600"),
        ("AMD EPYC 7B13 64-Core Processor,", "amd", "EPYC 7B13"),  # a list's comma left on
        ("Loongson-3A5000", "", "Loongson-3A5000"),  # no vendor we know: none, not a guess
        ("", "", ""),
    ],
)
def test_cpu_names_are_canonical(raw, vendor, model):
    assert normalize_cpu(raw) == (vendor, model)


@pytest.mark.parametrize(
    ("raw", "hint", "engine", "version", "major"),
    [
        (
            "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by "
            "gcc (Debian 12.2.0-14) 12.2.0, 64-bit",
            None,
            "postgresql",
            "15.18",
            "15",
        ),
        (
            "PostgreSQL 16.4 (Ubuntu 16.4-1.pgdg22.04+1) on aarch64-unknown-linux-gnu",
            None,
            "postgresql",
            "16.4",
            "16",
        ),
        ("PostgreSQL 9.6.24 on x86_64-pc-linux-gnu", None, "postgresql", "9.6.24", "9.6"),
        ("PostgreSQL 8.0.3 on i686-pc-mingw32", None, "postgresql", "8.0.3", "8.0"),
        ("PostgreSQL 17beta1 on x86_64-pc-linux-gnu", None, "postgresql", "17beta1", "17"),
        ("PostgreSQL 16devel", None, "postgresql", "16devel", "16"),
        ("15.4", "postgresql", "postgresql", "15.4", "15"),
        ("10.11.19-MariaDB-0+deb12u1", None, "mariadb", "10.11.19", "10.11"),
        ("5.5.5-10.11.19-MariaDB-0+deb12u1", None, "mariadb", "10.11.19", "10.11"),
        ("11.4.2-MariaDB-ubu2404", None, "mariadb", "11.4.2", "11.4"),
        ("8.0.36-0ubuntu0.22.04.1", "mysql", "mysql", "8.0.36", "8.0"),
        ("5.7.44-log", "mysql", "mysql", "5.7.44", "5.7"),
        ("MySQL 5.1.41", None, "mysql", "5.1.41", "5.1"),
        ("5.0.7-beta-nt", "mysql", "mysql", "5.0.7", "5.0"),
        ("8.0.35-27 Percona Server (GPL)", None, "mysql", "8.0.35", "8.0"),
        ("WI-V3.0.11.33637 Firebird 3.0", None, "firebird", "3.0.11", "3.0"),
        ("LI-V3.0.11.33703 Firebird 3.0", None, "firebird", "3.0.11", "3.0"),
        ("WI-V2.1.3.18185 Firebird 2.1", None, "firebird", "2.1.3", "2.1"),
        ("WI-V1.5.6.5026 Firebird 1.5", None, "firebird", "1.5.6", "1.5"),
        ("Firebird 2.5 RC1", None, "firebird", "2.5rc1", "2.5"),
        ("Firebird 2.5 RC 1", None, "firebird", "2.5rc1", "2.5"),
        ("LI-V3.0.11.33703", None, "firebird", "3.0.11", "3.0"),  # no engine word at all
        ("InterBase 7.5 WI-V7.5.1.80", None, "interbase", "7.5.1", "7.5"),
        ("PostgreSQL 10.23 on x86_64-pc-linux-gnu", None, "postgresql", "10.23", "10"),
        ("16RC1", "postgresql", "postgresql", "16rc1", "16"),
        ("LI-T6.0.0.1234 Firebird 6.0 Initial", None, "firebird", "6.0.0", "6.0"),
        ("WI-V8.1.0.257", "interbase", "interbase", "8.1.0", "8.1"),
        ("InterBase 2009 WI-V9.0.1.437", None, "interbase", "9.0.1", "9.0"),
        ("Yaffil 1.1", None, "yaffil", "1.1", "1.1"),
    ],
)
def test_server_versions_are_parsed(raw, hint, engine, version, major):
    assert parse_server_version(raw, hint) == (engine, version, major)


def test_version_sort_key_orders_numerically():
    older = parse_server_version("PostgreSQL 9.6.24").sort_key
    newer = parse_server_version("PostgreSQL 15.2").sort_key
    assert older < newer
    assert parse_server_version("PostgreSQL 15.10").sort_key > newer


@pytest.mark.parametrize(
    ("raw", "hint", "message"),
    [
        ("8.0.36", None, "send database.engine"),
        ("", None, "^the database version string is empty$"),
        ("PostgreSQL unknown", None, "cannot find a version number"),
        ("MySQL (no number)", None, "cannot find a version number"),
    ],
)
def test_unparsable_versions_say_why(raw, hint, message):
    with pytest.raises(UnknownEngineError, match=message):
        parse_server_version(raw, hint)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("ext4", "ext4"),
        ("EXT3", "ext3"),
        ("ufs2", "ufs"),
        ("UFS", "ufs"),
        ("ffs", "ufs"),
        ("zfs", "zfs"),
        ("XFS", "xfs"),
        ("jfs", "jfs"),
        ("raw device", "raw"),
        ("hfsplus", "hfs"),
        ("btrfs", "btrfs"),
        ("", ""),
        (None, ""),
    ],
)
def test_filesystems_use_one_vocabulary(raw, canonical):
    assert normalize_filesystem(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("rw,relatime", "relatime"),
        ("rw,noatime,sync", "noatime,sync"),
        (["sync", "noatime", "sync"], "noatime,sync"),
        ("local, soft-updates", "local,softupdates"),
        ("local, soft   updates", "local,softupdates"),
        ("rw,relatime,data=ordered,errors=remount-ro", "data=ordered,relatime"),
        # irrelevant to performance: left out, whatever their value
        ("discard,relatime,resgid=65534,resuid=65534,resv_strict,rw", "discard,relatime"),
        ("RW,nosuid,nodev,noexec,seclabel,x-systemd.automount,uid=1000", ""),
        # what changes what reaches the disk, or when, stays
        (
            "noatime,data=writeback,barrier=0,commit=60,discard,compress=zstd:3,sync",
            "barrier=0,commit=60,compress=zstd:3,data=writeback,discard,noatime,sync",
        ),
        ("NOATIME", "noatime"),
        ("", ""),
        (None, ""),
        # the pages' spelling of the empty set
        ("(None)", ""),
        (" (none) ,noatime", "noatime"),
    ],
)
def test_mount_options_are_a_sorted_set(raw, canonical):
    assert normalize_mount_options(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("[mq-deadline] kyber bfq none", "mq-deadline"),
        ("mq-deadline kyber [bfq] none", "bfq"),
        ("[none] mq-deadline", "none"),
        ("noop deadline [cfq]", "cfq"),
        ("deadline", "deadline"),
        ("CFQ", "cfq"),
        ("", ""),
    ],
)
def test_io_scheduler_is_the_active_one(raw, canonical):
    assert normalize_io_scheduler(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("Debian GNU/Linux", "debian"),
        ("Ubuntu", "ubuntu"),
        ("SuSE Linux", "suse"),
        ("openSUSE Leap", "opensuse"),
        ("Red Hat Enterprise Linux", "rhel"),
        ("Rocky Linux", "rocky"),
        ("FreeBSD", "freebsd"),
        ("Windows 2000 Server", "windows"),
        ("Some New Linux", "some-new-linux"),
    ],
)
def test_distributions_are_canonical(raw, canonical):
    assert normalize_distribution(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("none", "none"),
        ("kvm", "kvm"),
        ("QEMU", "kvm"),
        ("microsoft", "hyperv"),
        ("oracle", "virtualbox"),
        ("docker", "container"),
        ("vmware", "vmware"),
    ],
)
def test_virtualization_names_are_canonical(raw, canonical):
    assert normalize_virtualization(raw) == canonical
