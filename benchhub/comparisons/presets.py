"""Comparisons from the seed articles, as links, reproduced from the data
`manage.py load_demo_data` loads (benchhub/imports/articles/, and one
select-update sweep the agent measured, docs/examples/).

Each one is only what those documents hold: 004's text gives two plateau
points (parameter ``clients_from``), not a sweep over ``clients`` — the
measured sweep draws that curve — and 000 has no figures at all, so there
is no preset for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from benchhub.results.normalization.storage import NO_OPTIONS


@dataclass(frozen=True)
class Preset:
    seed: str
    title: str
    params: tuple[tuple[str, str], ...]

    @property
    def query(self) -> str:
        return urlencode(self.params)


PRESETS = [
    Preset(
        "001",
        "gbak backup time by protocol and CPU placement (Firebird 1.5 SuperServer)",
        (
            ("benchmark", "backup"),
            ("metric", "seconds"),
            # The measurement's protocol, not the run's: the agent times every
            # protocol in one run (its environment says "unknown"), the article
            # one a run, and both name it on each measurement.
            ("x", "param.protocol"),
            ("series", "cpu_placement"),
        ),
    ),
    Preset(
        "001",
        "Sort spilling to temp files: Firebird 2.1 vs InterBase 2009, TEMP compressed or not",
        (
            ("benchmark", "external-sort"),
            ("metric", "seconds"),
            ("x", "engine"),
            ("series", "run_param.temp_compressed"),
        ),
    ),
    Preset(
        "002",
        "sql-bench seconds per operation, UFS vs ZFS (my-huge.cnf)",
        (
            ("benchmark", "sql-bench"),
            ("metric", "seconds"),
            ("x", "param.operation"),
            ("series", "filesystem"),
            ("config_profile", "my-huge.cnf"),
        ),
    ),
    Preset(
        "002",
        "sql-bench TOTALS by my.cnf profile, UFS vs ZFS",
        (
            ("benchmark", "sql-bench"),
            ("metric", "seconds"),
            ("x", "config_profile"),
            ("series", "filesystem"),
            ("param.operation", "TOTALS"),
            # the article's UFS and ZFS columns; its UFS with softupdates
            # (my-innodb-heavy-4G.cnf only) would pool into that UFS cell
            ("mount_options", NO_OPTIONS),
        ),
    ),
    Preset(
        "003",
        "TPC-B per filesystem relative to the raw device = 100 (Table 3, deadline)",
        (
            ("benchmark", "tpcb"),
            ("metric", "tps_relative"),
            ("x", "os_distribution"),
            ("series", "filesystem"),
            ("reference", "raw"),
            ("os_distribution", "mandriva"),
        ),
    ),
    Preset(
        "003",
        "Filesystems by mount options, raw device = 100 (Tables 1 and 2, CFQ)",
        (
            ("benchmark", "tpc-average"),
            ("metric", "score_relative"),
            ("x", "filesystem"),
            ("series", "mount_options"),
            ("io_scheduler", "cfq"),
        ),
    ),
    Preset(
        "003",
        "TPC-B by filesystem, CFQ vs deadline on the CentOS VM (Table 4)",
        (
            ("benchmark", "tpcb"),
            ("metric", "tps_relative"),
            ("x", "filesystem"),
            ("series", "io_scheduler"),
            ("os_distribution", "centos"),
        ),
    ),
    Preset(
        "004",
        "select-update throughput plateau, MySQL vs PostgreSQL (approximate: two points)",
        (
            ("benchmark", "select-update"),
            ("metric", "throughput"),
            ("x", "param.clients_from"),
            ("series", "engine"),
        ),
    ),
    Preset(
        "004",
        "select-update throughput by clients, as the agent measures it (one machine, demo data)",
        (
            ("benchmark", "select-update"),
            ("metric", "throughput"),
            ("x", "param.clients"),
            ("series", "engine"),
        ),
    ),
]
