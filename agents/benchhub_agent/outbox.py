"""Documents not (yet) accepted by a server, kept on disk so that no run is lost.

``<uuid>.json`` is the document exactly as it will be sent. A document
BenchHub's upload endpoint refused (a 4xx in its JSON error shape; not a
404 of a wrong address, not a network error) also gets
``<uuid>.rejected.json`` with the server's answer: ``push`` leaves it
alone unless asked, since resending an unchanged document would be refused
again, but it stays for the user to read or fix.

Location: ``$BENCHHUB_OUTBOX``, else ``$XDG_DATA_HOME/benchhub/outbox``, else
``~/.local/share/benchhub/outbox``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_UUID_FILE = re.compile(r"^[0-9a-fA-F-]{36}\.json$")


def default_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("BENCHHUB_OUTBOX"):
        return Path(env["BENCHHUB_OUTBOX"])
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "benchhub" / "outbox"


class Outbox:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def document_path(self, document_uuid: str) -> Path:
        return self.path / f"{document_uuid}.json"

    def rejection_path(self, document_uuid: str) -> Path:
        return self.path / f"{document_uuid}.rejected.json"

    def save(self, document: dict[str, Any]) -> Path:
        """Write atomically: a crash mid-write must not leave half a document."""
        target = self.document_path(document["uuid"])
        _write_json(target, document)
        return target

    def load(self, document_uuid: str) -> dict[str, Any]:
        return json.loads(self.document_path(document_uuid).read_text("utf-8"))

    def uuids(self, *, include_rejected: bool = False) -> list[str]:
        """Kept documents, oldest first (the order they should reach the server)."""
        if not self.path.is_dir():
            return []
        files = [p for p in self.path.iterdir() if _UUID_FILE.match(p.name)]
        files.sort(key=lambda p: (p.stat().st_mtime, p.name))
        found = [p.name[: -len(".json")] for p in files]
        if include_rejected:
            return found
        return [u for u in found if not self.is_rejected(u)]

    def is_rejected(self, document_uuid: str) -> bool:
        return self.rejection_path(document_uuid).exists()

    def mark_rejected(self, document_uuid: str, answer: dict[str, Any]) -> None:
        note = {"rejected_at": dt.datetime.now(dt.UTC).isoformat(), **answer}
        _write_json(self.rejection_path(document_uuid), note)

    def remove(self, document_uuid: str) -> None:
        for path in (self.document_path(document_uuid), self.rejection_path(document_uuid)):
            path.unlink(missing_ok=True)


def _write_json(target: Path, data: dict[str, Any]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
