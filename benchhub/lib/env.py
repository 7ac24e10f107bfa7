"""Typed readers for settings that come from the environment.

A bad value stops the start with ImproperlyConfigured naming the variable,
never a bare ValueError from deep inside the settings module. Not
django-environ's: it reads a misspelt bool as false, "$x" as the variable x,
"2.5e1" as 2.51, and keeps the spaces of a list (tests/lib/test_env_readers.py)."""

import math
import os
import re

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    if value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected true or false (or 1/0, yes/no, on/off)")


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``, in any letter case, returned as ``choices``
    spells it: a misspelt level or format stops the start, where its reader
    (gunicorn, logging) would fall back to a default without a word, or
    fail with a ValueError that names no variable."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    for choice in choices:
        if value.strip().lower() == choice.lower():
            return choice
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of {', '.join(choices)}")


def envint(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a whole number") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected at least {minimum}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected at most {maximum}")
    return number


def envfloat(name: str, default: float, *, above: float | None = None) -> float:
    """A finite number (nan and inf are refused: no comparison with them
    means anything), greater than ``above`` when given."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number")
    if above is not None and number <= above:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number above {above:g}")
    return number


_RATE = re.compile(r"(\d+)/(second|minute|hour|day|sec|min|s|m|h|d)")


def envrate(name: str, default: str) -> str:
    """A request rate, "<requests>/<second|minute|hour|day>" (DRF's
    throttles read it on every request, so a bad one would answer every API
    request with a 500), at least one request; set empty, no limit ("")."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value.strip() == "":
        return ""
    match = _RATE.fullmatch(value.strip())
    if match is None:
        raise ImproperlyConfigured(
            f"{name}={value!r}: expected <requests>/<second|minute|hour|day>, "
            "e.g. 120/minute (empty: no limit)"
        )
    if int(match[1]) < 1:
        raise ImproperlyConfigured(f"{name}={value!r}: expected at least 1 request")
    return f"{int(match[1])}/{match[2]}"


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def envurl(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    """A URL with one of ``schemes``, in any letter case; set empty, the
    default. The message names the scheme only: the rest of the URL may hold
    a password, and the message goes to the log."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    scheme, separator, _ = value.strip().partition("://")
    if not _SCHEME.fullmatch(scheme):
        separator = ""  # "user:pass://…" is no scheme, and not to be repeated
    if not separator or scheme.lower() not in schemes:
        given = f"the scheme {scheme!r}" if separator else "no scheme"
        expected = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name} has {given}: expected one of {expected}")
    return value.strip()


def envlogfile(name: str) -> str | None:
    """Where a log goes: "-" (stdout), or an absolute path in a directory
    that exists; unset or empty, None (no log). A relative path is refused:
    "true" or "stdout" would be a file of that name wherever the server was
    started from, written without a word."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    if value.strip() == "-":
        return "-"
    if not os.path.isabs(value):
        raise ImproperlyConfigured(f"{name}={value!r}: expected - (stdout) or an absolute path")
    if not os.path.isdir(os.path.dirname(value)):
        raise ImproperlyConfigured(
            f"{name}={value!r}: the directory {os.path.dirname(value)} does not exist"
        )
    return value


def importable(name: str, path: str) -> None:
    """The dotted path of a setting imports: a misspelt one failed only when
    first used (EMAIL_BACKEND: a password reset answered 500). Called once the
    settings are loaded (an app's ready()), as the imported module may read
    them."""
    try:
        import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"{name}={path!r}: cannot be imported: {exc}") from None


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


# Keys seen in examples and compose files, which anyone can read.
_PLACEHOLDERS = ("change-me", "changeme", "django-insecure", "insecure", "secret", "xxx")


def secret_key_problem(key: str) -> str | None:
    """Why ``key`` must not sign sessions on a public host, or None."""
    if not key.strip():
        return "is empty"
    if len(key) < 50:
        return f"is {len(key)} characters long; use 50 or more"
    if len(set(key)) < 5:
        return "uses fewer than 5 different characters"
    if key.lower().startswith(_PLACEHOLDERS):
        return "is a placeholder from an example"
    return None
