"""Writes of the imports app."""

from __future__ import annotations

import json
import re
import uuid as uuid_module
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchhub_contract.importers import (
    TOOLS,
    EnvironmentConflict,
    ImportFormatError,
    parse_tool_output,
)
from benchhub_contract.schema import DocumentError
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from benchhub.results.comparability import canonical_json
from benchhub.results.documents import document_errors
from benchhub.results.models import Submission
from benchhub.results.services import (
    InvalidDocument,
    SubmissionOutcome,
    submission_create,
)

ARTICLES_DIR = Path(__file__).resolve().parent / "articles"
CURATOR_USERNAME = "benchhub-curators"


@dataclass(frozen=True)
class ArticleLoad:
    file: str
    submission: Submission
    created: bool


def curator_user() -> AbstractBaseUser:
    """The account curated article data is filed under. It cannot sign in."""
    user, created = get_user_model().objects.get_or_create(username=CURATOR_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def articles_load(*, directory: Path = ARTICLES_DIR) -> list[ArticleLoad]:
    """Store every article document as an approved curated submission.
    Loading again stores nothing new (each document has a fixed uuid)."""
    curator = curator_user()
    loaded = []
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text("utf-8"))
        outcome = submission_create(
            submitter=curator, document=document, status=Submission.Status.APPROVED
        )
        loaded.append(ArticleLoad(path.name, outcome.submission, outcome.created))
    return loaded


# --- tool outputs (pgbench, sysbench, BenchBase, HammerDB) ------------------------

# Derives the uuid of an upload that brings none, from what was uploaded:
# the same output with the same description, sent twice, is stored once.
TOOL_UPLOAD_NAMESPACE = uuid_module.UUID("7d0c35b4-5b8e-4c56-9a57-2f0f3c1f6a11")


class ToolOutputError(ValueError):
    """The uploaded text is not the tool output it claims to be (or a run
    parameter contradicts it). ``path`` names what to fix: ``$.output`` for
    the file itself, ``$.parameters.<name>`` for a parameter."""

    def __init__(self, message: str, path: str = "$.output") -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class ToolOutputReading:
    """What an upload would store: the whole document, and what stops it
    from being stored (empty when nothing does)."""

    document: dict[str, Any]
    errors: list[DocumentError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def tool_output_read(
    *,
    submitter: AbstractBaseUser,
    tool: str,
    text: str | bytes,
    environment: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
    command: str = "",
    submission_uuid: uuid_module.UUID | str | None = None,
) -> ToolOutputReading:
    """Parse ``text`` as ``tool``'s output and build the submission document
    around it, without storing anything (the web form's preview).

    Raises ToolOutputError when the text is not that tool's output; every
    other problem (a missing database version, a bad core count) is listed
    in the reading's ``errors``, with the document path it concerns.
    """
    try:
        imported = parse_tool_output(tool, text, parameters=parameters, command=command)
        document = imported.document(
            uuid="", environment=environment or {}, command=command.strip() or None
        )
    except EnvironmentConflict as exc:
        raise ToolOutputError(str(exc), exc.path) from None
    except ImportFormatError as exc:
        raise ToolOutputError(str(exc), _format_error_path(str(exc))) from None
    if imported.notes:
        document["source"]["note"] = "\n".join(imported.notes)[:4000]
    document["uuid"] = str(submission_uuid or _derived_uuid(submitter, document))
    return ToolOutputReading(document, _reading_errors(tool, document), list(imported.notes))


def tool_output_import(
    *,
    submitter: AbstractBaseUser,
    tool: str,
    text: str | bytes,
    environment: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
    command: str = "",
    submission_uuid: uuid_module.UUID | str | None = None,
) -> SubmissionOutcome:
    """Store a tool's output as a pending "import" submission, once.

    Raises ToolOutputError (the file is not what it claims to be),
    InvalidDocument (what the user described is incomplete or wrong) or
    SubmissionConflict (the uuid is taken by other content, or by another
    submitter); in each case nothing is stored. Without ``submission_uuid``
    the uuid derives from the submitter and the document, so a retried
    upload answers with the submission stored the first time.
    """
    reading = tool_output_read(
        submitter=submitter,
        tool=tool,
        text=text,
        environment=environment,
        parameters=parameters,
        command=command,
        submission_uuid=submission_uuid,
    )
    if reading.errors:
        raise InvalidDocument(reading.errors)
    return submission_create(submitter=submitter, document=reading.document)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


_DATABASE_VERSION_PATH = "$.environment.database.version_string"
_RUN_DATABASE_PATH = re.compile(r"^\$\.runs\[\d+\]\.environment\.database$")


def _reading_errors(tool: str, document: dict[str, Any]) -> list[DocumentError]:
    database = document["environment"].get("database")
    if database is None or (isinstance(database, dict) and _empty(database.get("version_string"))):
        # Said once, in the user's terms, instead of the schema's "required"
        # plus a "no database described" for every run.
        what = TOOLS[tool][0] if tool in TOOLS else tool
        missing = DocumentError(
            _DATABASE_VERSION_PATH,
            f"{what} does not name the database server: give its version "
            "(e.g. 16.2 with the engine, or the text of SELECT version())",
        )
        return [missing] + [
            error
            for error in document_errors(document)
            if error.path != _DATABASE_VERSION_PATH and not _RUN_DATABASE_PATH.match(error.path)
        ]
    return document_errors(document)


_PARAMETER_ERROR = re.compile(r"^parameter '([a-z][a-z0-9_]*)'")


def _format_error_path(message: str) -> str:
    """Point a parameter problem at the parameter, anything else at the output."""
    match = _PARAMETER_ERROR.match(message)
    if match:
        return f"$.parameters.{match.group(1)}"
    if "which test ran" in message:  # sysbench does not print its test name
        return "$.parameters.test"
    return "$.output"


def _derived_uuid(submitter: AbstractBaseUser, document: dict[str, Any]) -> uuid_module.UUID:
    key = canonical_json({"submitter": submitter.pk, "document": {**document, "uuid": ""}})
    return uuid_module.uuid5(TOOL_UPLOAD_NAMESPACE, key)
