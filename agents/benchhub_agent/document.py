"""The submission document (schema 1): built, redacted, validated before it leaves.

The document is validated with the same JSON Schema the server uses, and its
metrics are checked against the benchmark catalog (the server refuses a
metric it does not know), so a bad document is caught on the machine that
made it, with the run's figures still at hand.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from benchhub_contract.schema import (
    SCHEMA_VERSION,
    DocumentError,
    catalog_errors,
    validation_errors,
)

from . import __version__
from .benchmarks.base import BenchmarkResult

TOOL = "benchhub-agent"

# Options whose value is a secret or names a machine: never part of the recorded command.
DROPPED_OPTIONS = frozenset({"--token", "--server"})
# Flags that say what to do with the result, not how it was measured.
DROPPED_FLAGS = frozenset({"--dry-run", "--upload", "--keep"})
# The DSN options a recorded command keeps: they change how the run connects
# and say nothing about who or where. Every other one is dropped, known or not
# (sslpassword, sslkey paths, application_name=alice-laptop, service names…).
KEPT_DSN_QUERY = frozenset(
    {"sslmode", "connect_timeout", "gssencmode", "target_session_attrs", "charset"}
)
_PLAIN_OPTION_VALUE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")

# Import documents get a uuid derived from the tool's output alone: importing the
# same output twice, with or without --dsn, is then the same submission, which the
# server stores once.
IMPORT_NAMESPACE = uuid.UUID("6b1f0e5c-2a44-4f0e-9a51-7d3c1f0b8e21")


class InvalidDocument(ValueError):
    def __init__(self, errors: Sequence[DocumentError]) -> None:
        self.errors = list(errors)
        lines = "\n".join(f"  {e.path}: {e.message}" for e in self.errors)
        super().__init__(f"the document is not valid:\n{lines}")


def new_uuid() -> str:
    return str(uuid.uuid4())


def import_uuid(tool: str, text: str) -> str:
    """The uuid of an import of ``text``, from what the output says, not its bytes.

    Copying a file between machines, editors and terminals adds a trailing
    newline, CRLF line ends, a byte-order mark or trailing blanks; the output
    says the same, so it is the same submission.
    """
    digest = hashlib.sha256(f"{tool}\0{output_content(text)}".encode()).hexdigest()
    return str(uuid.uuid5(IMPORT_NAMESPACE, digest))


def output_content(text: str) -> str:
    """``text`` without what copying adds: BOM, CR line ends, blanks at line ends,
    blank lines before the first and after the last line."""
    unix = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in unix.split("\n")).strip("\n")


def dsn_shape(dsn: str) -> str:
    """The DSN with user, password, host and socket path replaced by placeholders.

    What remains (engine, port, database name, the options of KEPT_DSN_QUERY
    with a plain value) is what a reader needs to repeat the run on their own
    machine. A path's spaces are percent-encoded, so that the whole path is
    one word for the redaction of Firebird files, never cut at a space.
    """
    parts = urlsplit(dsn)
    auth = ""
    if parts.username:
        auth = "USER:***@" if parts.password else "USER@"
    host = "HOST" if parts.hostname else ""
    if parts.port:
        host += f":{parts.port}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = [
        (k, v) for k, v in pairs if k.lower() in KEPT_DSN_QUERY and _PLAIN_OPTION_VALUE.match(v)
    ]
    given = {k for k, _ in pairs}
    if "unix_socket" in given:  # MySQL/MariaDB name the socket file itself
        query.append(("unix_socket", "SOCKET"))
    elif "host" in given:  # libpq names the directory the socket is in
        query.append(("host", "SOCKET_DIR"))
    tail = f"?{urlencode(query, safe='/')}" if query else ""
    path = quote(unquote(parts.path), safe="/:\\")
    return f"{parts.scheme}://{auth}{host}{path}{tail}"


def reproducing_command(argv: Sequence[str]) -> str:
    """``benchhub-agent`` + the arguments, with the DSN redacted and secrets dropped."""
    shown: list[str] = []
    skip_value = False
    redact_next = False
    for arg in argv:
        if skip_value:
            skip_value = False
            continue
        if redact_next:
            shown.append(dsn_shape(arg))
            redact_next = False
            continue
        name, eq, value = arg.partition("=")
        if name in DROPPED_FLAGS:
            continue
        if name in DROPPED_OPTIONS:
            skip_value = not eq
            continue
        if name == "--dsn":
            if eq:
                shown.append(f"--dsn={dsn_shape(value)}")
            else:
                shown.append(arg)
                redact_next = True
            continue
        shown.append(arg)
    return shlex.join([TOOL, *shown])[:4000]


def agent_document(
    *,
    document_uuid: str,
    result: BenchmarkResult,
    command: str,
    machine: dict[str, Any],
) -> dict[str, Any]:
    environment = dict(machine)
    if result.database:
        environment["database"] = result.database
    if result.client:
        environment["client"] = result.client
    return {
        "schema": SCHEMA_VERSION,
        "uuid": document_uuid,
        "source": {
            "kind": "agent",
            "tool": TOOL,
            "tool_version": __version__,
            "command": command,
        },
        "environment": environment,
        "runs": [result.run_document()],
    }


def validate(document: dict[str, Any]) -> None:
    errors = validation_errors(document)
    if not errors:
        errors = catalog_errors(document)
    if errors:
        raise InvalidDocument(errors)
