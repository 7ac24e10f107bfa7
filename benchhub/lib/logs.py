"""Structured logs: one JSON object per line, without secrets.

API tokens (``bh_…``), ``Authorization`` values and passwords in URLs are
replaced wherever they appear in a message or a traceback, so that a log
shipped to a third party never carries a credential."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re

_SECRETS = [
    # API tokens (benchhub.accounts.services.TOKEN_PREFIX + token_urlsafe)
    (re.compile(r"\bbh_[A-Za-z0-9_\-]{8,}"), "bh_[redacted]"),
    # Authorization: Token …, Bearer …, Basic …
    (re.compile(r"(?i)\b(token|bearer|basic)(\s+|=)[A-Za-z0-9_\-\.=+/]{8,}"), r"\1\2[redacted]"),
    # scheme://user:password@host
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), r"\1[redacted]@"),
    # password=…, secret=…, token=… in query strings and key=value text
    (re.compile(r"(?i)\b(password|passwd|secret|api_key|token)=[^&\s\"']+"), r"\1=[redacted]"),
]
# Attributes of every LogRecord; anything else was passed as extra=.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# Objects Django attaches (the request, the server) are not logged whole.
_SKIPPED_EXTRA = {"request", "server_time"}


def redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        request = getattr(record, "request", None)
        if request is not None and hasattr(request, "path"):
            # The path only: a query string may hold anything.
            entry["method"], entry["path"] = request.method, redact(request.path)
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in _SKIPPED_EXTRA and key not in entry:
                entry[key] = value if isinstance(value, int | float | bool) else redact(str(value))
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)
