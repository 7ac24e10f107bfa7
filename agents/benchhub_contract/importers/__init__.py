"""Turn other tools' output into BenchHub runs.

    parse_tool_output("pgbench", text) -> ImportedRuns

Tools: ``pgbench`` (the end-of-run report, PostgreSQL 13-17, with or
without -P and -r), ``pgbench-log`` (an aggregate log, -l
--aggregate-interval), ``sysbench`` (1.0 and 1.1 oltp_* text output),
``benchbase`` (summary.json) and ``hammerdb`` (TEST RESULT lines).

A file that is not what it claims to be, or is cut short, raises
:class:`ImportFormatError` saying what was expected; nothing is half
parsed and no figure is made up. What the output does not say (the
machine, the database when the tool does not print it, sysbench's test
name, an aggregate log's clients) the caller supplies: run parameters
through ``parameters=``, environment sections through
:meth:`ImportedRuns.document`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import benchbase, hammerdb, pgbench, pgbench_log, sysbench
from ._common import EnvironmentConflict, ImportedRuns, ImportFormatError, normalized_text

__all__ = [
    "TOOLS",
    "EnvironmentConflict",
    "ImportFormatError",
    "ImportedRuns",
    "parse_tool_output",
]

Parser = Callable[[str, Mapping[str, Any] | None], ImportedRuns]

TOOLS: dict[str, tuple[str, Parser]] = {
    "pgbench": (pgbench.WHAT, pgbench.parse),
    "pgbench-log": (pgbench_log.WHAT, pgbench_log.parse),
    "sysbench": (sysbench.WHAT, sysbench.parse),
    "benchbase": (benchbase.WHAT, benchbase.parse),
    "hammerdb": (hammerdb.WHAT, hammerdb.parse),
}


def parse_tool_output(
    tool: str,
    text: str | bytes,
    *,
    parameters: Mapping[str, Any] | None = None,
    command: str | None = None,
) -> ImportedRuns:
    """Parse ``text`` as the output of ``tool``; see the module docstring.

    ``parameters`` are run parameters the output does not state (e.g.
    ``{"test": "oltp_read_write"}`` for sysbench); one that contradicts the
    output is refused. ``command`` is the command line the run was started
    with, as the user gives it beside the file: sysbench reads its test and
    workload options from it as from a line pasted above the output (one
    that differs from a line in the file is refused); the other tools print
    what they ran.
    """
    try:
        what, parse = TOOLS[tool]
    except KeyError:
        known = ", ".join(TOOLS)
        raise ImportFormatError(f"unknown tool {tool!r}; expected one of {known}") from None
    output = normalized_text(text, what)
    if tool == "sysbench" and command and command.strip():
        output = f"{' '.join(command.split())}\n{output}"
    return parse(output, parameters)
