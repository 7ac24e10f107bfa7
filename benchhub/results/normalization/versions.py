"""Database server version strings, as ``SELECT version()`` and friends print
them, to (engine, version, major)."""

import re
from typing import NamedTuple


class UnknownEngineError(ValueError):
    pass


class ServerVersion(NamedTuple):
    engine: str
    version: str  # "15.18", "10.11.19", "3.0.11", "17beta1"
    major: str  # the release series people compare: "15", "9.6", "10.11", "3.0"

    @property
    def sort_key(self) -> str:
        return version_sort_text(self.version)


_ENGINE_WORDS = [
    ("mariadb", re.compile(r"mariadb", re.I)),
    ("postgresql", re.compile(r"postgres", re.I)),
    ("firebird", re.compile(r"firebird", re.I)),
    ("interbase", re.compile(r"interbase", re.I)),
    ("yaffil", re.compile(r"yaffil", re.I)),
    ("sqlite", re.compile(r"sqlite", re.I)),
    ("mysql", re.compile(r"mysql|percona", re.I)),
]

# "5.5.5-10.11.19-MariaDB": old MySQL clients need a 5.x version, so MariaDB
# 10+ prefixes one; the real version follows it.
_MARIADB_COMPAT_PREFIX = re.compile(r"^5\.5\.5-")
_NUMBER = r"(\d+(?:\.\d+){0,3})"
_PRERELEASE = r"(?:[\s-]*((?:alpha|beta|rc|devel)\s*\d*))?"


# The one order of server versions, for every page, filter and answer that
# orders them: numerically part by part (15.2 < 15.10), a pre-release before
# its release (16devel < 16beta1 < 16beta2 < 16rc1 < 16.0 < 16.1), whatever
# follows the number ("11.4.2-MariaDB-log", a build) read as nothing, and a
# text without a number before every version (its stored key is empty).
_STAGES = {"devel": "a", "dev": "a", "alpha": "b", "beta": "c", "rc": "d"}
_RELEASE = "r"  # after every pre-release stage
_PARTS = 4  # "3.0.11.33703": Firebird's build is the fourth
_WIDTH = 5  # digits per part in the stored text; larger numbers are clipped
_VERSION_AT = re.compile(
    r"(\d+(?:\.\d+)*)(?:[\s._-]*(devel|dev|alpha|beta|rc)(?![a-z])[\s._-]*(\d*))?", re.I
)


def _version_parts(text: str) -> tuple[tuple[int, ...], str, int] | None:
    """(the numbers, padded to _PARTS, the stage, the stage's number), or None."""
    match = _VERSION_AT.search(_MARIADB_COMPAT_PREFIX.sub("", (text or "").strip()))
    if match is None:
        return None
    limit = 10**_WIDTH - 1
    numbers = [min(int(part), limit) for part in match.group(1).split(".")[:_PARTS]]
    numbers += [0] * (_PARTS - len(numbers))
    if match.group(2) is None:
        return tuple(numbers), _RELEASE, 0
    return tuple(numbers), _STAGES[match.group(2).lower()], min(int(match.group(3) or 0), limit)


def version_order(text: str) -> tuple:
    """The sort key of a version text in Python: ``sorted(versions, key=version_order)``.
    Orders as ``version_sort_text`` does in the database; equal versions
    spelled differently ("16", "16.0") by their text."""
    parts = _version_parts(text)
    if parts is None:
        return (0, (), "", 0, str(text or ""))
    return (1, *parts, str(text))


def version_sort_text(text: str) -> str:
    """The sort key of a version text as stored text, for ORDER BY and bounds
    (``DatabaseServer.version_sort``): fixed-width fields, so that any
    collation, one ignoring punctuation included, orders them as
    ``version_order`` does. "" for a text without a number."""
    parts = _version_parts(text)
    if parts is None:
        return ""
    numbers, stage, number = parts
    return ".".join(str(n).zfill(_WIDTH) for n in numbers) + f".{stage}{number:0{_WIDTH}d}"


def _engine_of(raw: str, hint: str | None) -> str:
    for engine, pattern in _ENGINE_WORDS:
        if pattern.search(raw):
            return engine
    # Firebird and InterBase print "WI-V3.0.11.33637": platform, V, version.
    if re.match(r"^[A-Z]{2}-[VTB]\d", raw) and hint in (None, "firebird", "interbase"):
        return hint or "firebird"
    if hint:
        return hint
    raise UnknownEngineError(
        f"cannot tell the database engine from {raw!r}; send database.engine as well"
    )


def _version_text(engine: str, raw: str) -> str | None:
    text = _MARIADB_COMPAT_PREFIX.sub("", raw.strip())
    if engine in ("firebird", "interbase"):
        match = re.search(r"[A-Z]{2}-[VTB]" + _NUMBER, text)
        if match:
            parts = match.group(1).split(".")
            # The fourth part is the build number, not part of the release.
            return ".".join(parts[:3])
        match = re.search(r"(?:firebird|interbase|yaffil)\s+" + _NUMBER + _PRERELEASE, text, re.I)
        return _joined(match)
    if engine == "postgresql":
        match = re.search(r"postgres(?:ql)?\s+" + r"(\d+(?:\.\d+){0,2})" + _PRERELEASE, text, re.I)
        if match is None:
            match = re.match(r"(\d+(?:\.\d+){0,2})" + _PRERELEASE, text, re.I)
        return _joined(match)
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def _joined(match: re.Match[str] | None) -> str | None:
    """Number plus pre-release tag, the tag folded: '2.5 RC 1' → '2.5rc1'."""
    if match is None:
        return None
    tag = re.sub(r"\s+", "", match.group(2) or "").lower()
    return match.group(1) + tag


def _major(engine: str, version: str) -> str:
    parts = re.findall(r"\d+", version)
    if not parts:
        return ""
    # PostgreSQL numbers majors "15" since version 10, "9.6" before.
    if engine == "postgresql" and int(parts[0]) >= 10:
        return parts[0]
    return ".".join(parts[:2])


def parse_server_version(raw: str, engine_hint: str | None = None) -> ServerVersion:
    """Parse a server's own version text.

    >>> parse_server_version("10.11.19-MariaDB-0+deb12u1")
    ServerVersion(engine='mariadb', version='10.11.19', major='10.11')
    """
    raw = (raw or "").strip()
    if not raw:
        raise UnknownEngineError("the database version string is empty")
    engine = _engine_of(raw, engine_hint)
    version = _version_text(engine, raw)
    if version is None:
        raise UnknownEngineError(f"cannot find a version number in {raw!r}")
    return ServerVersion(engine, version, _major(engine, version))
