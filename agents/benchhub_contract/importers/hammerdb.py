"""HammerDB TPROC-C result lines.

HammerDB 4+ prints ``TEST RESULT : System achieved N NOPM from M <db> TPM``;
3.x printed ``TEST RESULT : System achieved M <db> TPM at N NOPM``. Both
are read, with or without the ``Vuser 1:`` prefix. Each result line is one
run (repetitions 1) of the catalog benchmark ``tpcc``: several results in
one log are several runs, never averaged here.

The virtual users come from the "N Active Virtual Users configured" line
HammerDB prints just before the result, when it is there. The database
named in "<db> TPM" is passed on as ``ImportedRuns.engine`` (no version
string comes with it). A TPM of 0 is what HammerDB prints when it cannot
read the database's transaction counter, so it is not imported as a
measurement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._common import (
    ImportedRuns,
    measurement,
    merge_parameters,
    not_this_tool,
    run_document,
    whole_number,
)

WHAT = "HammerDB output"
BENCHMARK = "tpcc"
EXPECTED = "a line 'TEST RESULT : System achieved N NOPM from M … TPM'"

_NEW = re.compile(
    r"TEST RESULT : System achieved (?P<nopm>\d+) NOPM from (?P<tpm>\d+) (?P<db>.+?) TPM\s*$"
)
_OLD = re.compile(
    r"TEST RESULT : System achieved (?P<tpm>\d+) (?P<db>.+?) TPM at (?P<nopm>\d+) NOPM\s*$"
)
_USERS = re.compile(r"(?:^|:)(?P<users>\d+) Active Virtual Users configured\s*$")
_VERSION = re.compile(r"^HammerDB CLI v?(?P<version>\d+\.\d+\S*)")
_ENGINES = {"PostgreSQL": "postgresql", "MySQL": "mysql", "MariaDB": "mariadb"}


def parse(text: str, parameters: Mapping[str, Any] | None = None) -> ImportedRuns:
    runs: list[dict[str, Any]] = []
    databases: set[str] = set()
    users: int | None = None
    version: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        if match := _VERSION.match(line):
            version = match["version"]
        if match := _USERS.search(line):
            users = whole_number(match["users"], WHAT, "a number of active virtual users")
        if "TEST RESULT" not in line:
            continue
        match = _NEW.search(line) or _OLD.search(line)
        if not match:
            raise not_this_tool(WHAT, f"{EXPECTED}; line {number} is cut short: {line.strip()!r}")
        databases.add(match["db"])
        runs.append(_run(match, users, parameters))
        users = None
    if not runs:
        raise not_this_tool(WHAT, EXPECTED)
    return ImportedRuns(
        runs=runs,
        facts={"client": {"load_engine": "hammerdb"}},
        source={"kind": "import", "tool": "hammerdb"}
        | ({"tool_version": version} if version else {}),
        engine=_engine(databases),
    )


def _run(
    match: re.Match[str], users: int | None, parameters: Mapping[str, Any] | None
) -> dict[str, Any]:
    point = {"virtual_users": users} if users is not None else {}
    nopm = whole_number(match["nopm"], WHAT, "a whole number of NOPM")
    measurements = [measurement(BENCHMARK, "nopm", nopm, point)]
    notes = [f"Imported from HammerDB's result line: {match.group(0).strip()}"]
    tpm = whole_number(match["tpm"], WHAT, "a whole number of TPM")
    if tpm:
        measurements.append(measurement(BENCHMARK, "tpm", tpm, point))
    else:
        notes.append(
            "HammerDB printed 0 TPM (it could not read the transaction counter); not imported."
        )
    return run_document(BENCHMARK, merge_parameters({}, parameters), measurements, notes)


def _engine(databases: set[str]) -> str | None:
    if len(databases) != 1:
        return None
    return _ENGINES.get(databases.pop(), "other")
