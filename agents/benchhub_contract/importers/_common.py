"""What every importer shares: the error it raises, the result it returns,
and the helpers that keep units and names exactly as the catalog has them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchhub_contract.schema import metric_catalog

Number = int | float


class ImportFormatError(ValueError):
    """The text is not the tool output it claims to be, or is cut short.

    The message says what was expected, so that the person uploading the
    file can tell a wrong file from a truncated one. Nothing is imported
    from a file that raises it.
    """


class EnvironmentConflict(ImportFormatError):
    """The output states one thing of the environment and the caller another."""

    def __init__(self, section: str, key: str, stated: Any, given: Any) -> None:
        self.path = f"$.environment.{section}.{key}"
        super().__init__(
            f"environment.{section}.{key}: the output says {stated!r} but {given!r} was "
            "given; both describe the same run, so correct one of them"
        )


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


@dataclass
class ImportedRuns:
    """What a tool's output says, in the submission document's shapes.

    ``runs``   — schema "run" objects (benchmark, benchmark_version,
                 parameters, repetitions, measurements, note).
    ``facts``  — environment sections the output itself states
                 (``database``, ``client``), in the document's shape; the
                 caller adds what the output does not say.
    ``source`` — the document's ``source`` object: kind "import", the tool
                 and, when printed, its version.
    ``engine`` — the database engine the output names without giving a
                 version string (HammerDB's "PostgreSQL TPM"), for the
                 caller to put in ``environment.database.engine``.
    """

    runs: list[dict[str, Any]]
    facts: dict[str, Any]
    source: dict[str, Any]
    engine: str | None = None
    notes: list[str] = field(default_factory=list)

    def environment(self, supplied: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The caller's environment completed with what the output states.

        The one rule for the agent's ``import`` and the web site's upload:
        both describe the same run, so they must agree. A field only one
        gives is taken; equal values are kept; of two texts where one
        extends the other (``version()``'s 'PostgreSQL 15.20 (Debian …) on
        x86_64…' and pgbench's 'PostgreSQL 15.20 (Debian …)') the fuller is
        kept; anything else raises EnvironmentConflict naming the field.
        The engine the output names without a version (``engine``) becomes
        the database section's engine hint unless one was given.
        """
        # Empty fields (a form's blank inputs) say nothing; empty sections go.
        merged: dict[str, Any] = {}
        for section, given_values in (supplied or {}).items():
            if not isinstance(given_values, Mapping):
                merged[section] = given_values  # not an object: the schema check says so
                continue
            kept = {k: v for k, v in given_values.items() if not _empty(v)}
            if kept:
                merged[section] = kept
        for section, values in self.facts.items():
            target = merged.setdefault(section, {})
            if not isinstance(target, dict):
                continue  # not an object: the schema check reports it
            for key, stated in values.items():
                given = target.get(key)
                if _empty(given) or given == stated:
                    target[key] = stated
                elif (
                    isinstance(given, str)
                    and isinstance(stated, str)
                    and (given.startswith(stated) or stated.startswith(given))
                ):
                    target[key] = max(given, stated, key=len)
                else:
                    raise EnvironmentConflict(section, key, stated, given)
        database = merged.get("database")
        if self.engine and isinstance(database, dict):
            database.setdefault("engine", self.engine)
        return merged

    def document(
        self,
        *,
        uuid: str,
        environment: Mapping[str, Any] | None = None,
        command: str | None = None,
    ) -> dict[str, Any]:
        """A whole submission document (schema 1) around these runs."""
        source = dict(self.source)
        if command:
            source["command"] = command
        return {
            "schema": 1,
            "uuid": uuid,
            "source": source,
            "environment": self.environment(environment),
            "runs": self.runs,
        }


def not_this_tool(what: str, expected: str) -> ImportFormatError:
    """The one message shape: which tool's output was expected, and what in it."""
    return ImportFormatError(f"this does not look like {what}: expected {expected}")


def measurement(
    benchmark: str,
    metric: str,
    value: Number,
    parameters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One measurement with the catalog's unit, so that no importer spells a unit."""
    unit = metric_catalog()[benchmark][metric]["unit"]
    doc: dict[str, Any] = {"metric": metric, "unit": unit, "value": value}
    if parameters:
        doc["parameters"] = dict(parameters)
    return doc


def run_document(
    benchmark: str,
    parameters: Mapping[str, Any],
    measurements: list[dict[str, Any]],
    notes: Iterable[str] = (),
) -> dict[str, Any]:
    run: dict[str, Any] = {
        "benchmark": benchmark,
        "benchmark_version": "1",
        "parameters": dict(parameters),
        "repetitions": 1,
        "measurements": measurements,
    }
    note = "\n".join(notes)
    if note:
        run["note"] = note
    return run


_PARAMETER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def merge_parameters(
    parsed: Mapping[str, Any], supplied: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Run parameters the output states plus the ones the caller supplies.

    A supplied value that contradicts the output is refused rather than
    silently preferred: one of the two is wrong and we cannot tell which.
    """
    merged = dict(parsed)
    for name, value in (supplied or {}).items():
        if not _PARAMETER_NAME.match(name):
            raise ImportFormatError(
                f"parameter {name!r}: names are lower-case letters, digits and _"
            )
        if not isinstance(value, (str, int, float, bool)):
            raise ImportFormatError(f"parameter {name!r}: expected a string, number or boolean")
        if name in merged and merged[name] != value:
            raise ImportFormatError(
                f"parameter {name!r}: the output says {merged[name]!r}, you gave {value!r}"
            )
        merged[name] = value
    return merged


def number(text: str) -> Number:
    """An int when the tool printed an int, else a float; never rounds. An
    integer beyond 64 bits is a float too: int() raises beyond 4,300 digits,
    and the document's bounds refuse what is beyond 64 bits either way."""
    return int(text) if re.fullmatch(r"-?[0-9]{1,20}", text) else float(text)


def whole_number(text: str, what: str, expected: str) -> int:
    """``int(text)``, or the file refused like any other unreadable field:
    str.isdigit() and \\d accept "²", which int() refuses, and any number
    of digits, which int() raises on beyond 4,300 (a 500 on the server). A
    count a tool prints fits 64 bits: 20 digits at most."""
    if text.isascii() and text.isdigit() and len(text) <= 20:
        return int(text)
    shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}… ({len(text)} characters)"
    raise not_this_tool(what, f"{expected} (at most 20 digits 0-9), got {shown}")


def normalized_text(data: str | bytes, what: str) -> str:
    """The upload as text with Unix line ends, or a clear refusal.

    Binary files are refused here, once, instead of in every parser: a
    NUL byte or undecodable bytes never occur in any of these tools' output.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFormatError(
                f"this does not look like {what}: it is not UTF-8 text "
                f"(undecodable byte at offset {exc.start})"
            ) from None
    text = data.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text or _mostly_control(text):
        raise ImportFormatError(
            f"this does not look like {what}: it contains binary data, expected text"
        )
    if not text.strip():
        raise ImportFormatError(f"the file is empty; expected {what}")
    return text


def _mostly_control(text: str) -> bool:
    sample = text[:4096]
    # U+FFFD counts too: a caller that decoded bytes with errors="replace"
    # hands us binary as replacement characters.
    control = sum(1 for c in sample if (ord(c) < 32 and c not in "\n\t") or c == "\ufffd")
    return control > len(sample) // 20
