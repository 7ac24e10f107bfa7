"""Nothing private leaves the machine: host names, user names, home paths, IP addresses.

Every string of a document passes through :func:`redact` before it is
validated, printed or sent. What is found is replaced by a placeholder and
listed in the document's ``redacted`` field (kind, JSON path, placeholder;
never the value), so a reader knows a figure's context was edited and the
user can see exactly what was removed (``benchhub-agent sysinfo
--show-redacted``). A Firebird database is a file: its DSN's path is reduced
to the filesystem it lives on (``FILE_ON_EXT4``), which is what decides its
speed. Serial numbers are never read (:mod:`.sysinfo`).
"""

from __future__ import annotations

import contextlib
import getpass
import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

HOME_PATH = "HOME_PATH"
HOST_NAME = "HOSTNAME"
USER_NAME = "USER"
IP_ADDRESS = "IP_ADDRESS"

# Service accounts named like the software: replacing them would mangle version
# strings and commands ("postgres" is in every PostgreSQL document) and they say
# nothing about the person.
PUBLIC_USER_NAMES = frozenset(
    {"root", "postgres", "mysql", "mariadb", "firebird", "sysdba", "admin", "user", "nobody"}
)

# /home/alice/…, /Users/alice/…, /root/…, C:\Users\alice\…, ~alice/…
_HOME = re.compile(
    r"(?:(?<![\w/])/(?:home|Users)/[^/\s\"']+|(?<![\w/])/root(?=/|\b)"
    r"|\b[A-Za-z]:\\Users\\[^\\\s\"']+|(?<!\w)~[\w.-]*)(?:[/\\][^\s\"':,;]*)?"
)
_IPV4 = re.compile(r"(?<![\w.-])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
# Firebird DSNs keep a file path where other engines have a database name. Inside
# quotes the path runs to the closing quote: ending it at the first space would
# leave the rest of a name like "ag field.fdb" behind.
_FIREBIRD_DSN = re.compile(
    r"(?<=')firebird://[^']+(?=')|(?<=\")firebird://[^\"]+(?=\")|firebird://[^\s\"']+"
)
# A tool's command line naming a server or a login: --mysql-host=db1.corp, -h db1,
# --pgsql-user alice, -U alice, host=db1 (libpq keywords).
_OPTION_VALUE = re.compile(
    r"(?P<option>(?<![\w-])(?:--(?:[A-Za-z0-9]+[-_])*(?P<long>host|hostname|user|username)(?:=|\s+)"
    r"|-(?P<short>[hU])\s*|(?P<keyword>host|user)=))(?P<value>[^\s'\",;]+)"
)
PLACEHOLDERS = frozenset({HOME_PATH, HOST_NAME, USER_NAME, IP_ADDRESS, "HOST", "SOCKET_DIR"})
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})


@dataclass
class Finding:
    kind: str  # home_path, host_name, user_name, ip_address, database_path
    path: str  # where in the document, as a JSON path
    replacement: str
    original: str = field(default="", repr=False)  # shown locally only, never sent

    def as_document(self) -> dict[str, str]:
        return {"kind": self.kind, "path": self.path, "replacement": self.replacement}


@dataclass
class Identity:
    """What names this machine and its user, found once per process."""

    host_names: tuple[str, ...]
    user_names: tuple[str, ...]

    @classmethod
    def of_this_machine(cls) -> Identity:
        hosts = {socket.gethostname()}
        with contextlib.suppress(OSError):
            hosts.add(socket.getfqdn())
        users = {os.environ.get("USER", ""), os.environ.get("USERNAME", "")}
        with contextlib.suppress(OSError, KeyError):  # no passwd entry for the uid
            users.add(getpass.getuser())
        return cls(
            host_names=_meaningful(hosts, {"localhost", "localhost.localdomain"}),
            user_names=_meaningful(users, PUBLIC_USER_NAMES),
        )


def _meaningful(names: Iterable[str], public: Iterable[str]) -> tuple[str, ...]:
    skip = {name.lower() for name in public}
    found = {n for n in names if n and len(n) >= 2 and n.lower() not in skip}
    return tuple(sorted(found, key=len, reverse=True))  # longest first: fqdn before host


def redact(
    document: dict[str, Any],
    identity: Identity | None = None,
    filesystem_of: Callable[[str], str | None] | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """A copy of ``document`` without private strings, its ``redacted`` list filled in.

    ``filesystem_of(path)`` names the filesystem a local file lives on (for a
    Firebird DSN); the default asks this machine's mount table.
    """
    identity = identity or Identity.of_this_machine()
    filesystem_of = filesystem_of or _filesystem_of
    findings: list[Finding] = []
    clean = _walk(document, "$", identity, filesystem_of, findings)
    previous = [r for r in document.get("redacted") or [] if isinstance(r, dict)]
    if findings or previous:
        clean["redacted"] = previous + [f.as_document() for f in findings]
    return clean, findings


# Fields whose values come from the catalog or the schema, never from the machine:
# a user named "update" must not turn the benchmark "select-update" into
# "select-USER", which the server would refuse.
_CATALOG_FIELDS = frozenset(
    {"redacted", "schema", "uuid", "kind", "benchmark", "benchmark_version", "metric", "unit"}
)


def _walk(value: Any, path: str, identity: Identity, fs: Callable, found: list[Finding]) -> Any:
    if isinstance(value, dict):
        return {
            key: item
            if key in _CATALOG_FIELDS
            else _walk(item, _key(path, key), identity, fs, found)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_walk(item, f"{path}[{i}]", identity, fs, found) for i, item in enumerate(value)]
    if isinstance(value, str):
        return redact_text(value, path, identity, fs, found)
    return value


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_]\w*", key) else f"{path}[{key!r}]"


def redact_text(
    text: str, path: str, identity: Identity, fs: Callable, found: list[Finding]
) -> str:
    def replace(pattern: re.Pattern[str], kind: str, make: Callable[[str], str | None]) -> None:
        nonlocal text

        def one(match: re.Match[str]) -> str:
            replacement = make(match.group(0))
            if replacement is None:
                return match.group(0)
            found.append(Finding(kind, path, replacement, match.group(0)))
            return replacement

        text = pattern.sub(one, text)

    replace(_FIREBIRD_DSN, "database_path", lambda dsn: _firebird_dsn(dsn, fs))
    text = _option_values(text, path, found)
    replace(_HOME, "home_path", lambda _: HOME_PATH)
    replace(_IPV4, "ip_address", lambda m: IP_ADDRESS if _is_ip(m) else None)
    replace(_IPV6, "ip_address", lambda m: IP_ADDRESS if ":" in m and _is_ip(m) else None)
    for name in identity.host_names:
        replace(_word(name), "host_name", lambda _: HOST_NAME)
    for name in identity.user_names:
        replace(_user_word(name), "user_name", lambda _: USER_NAME)
    return text


def _option_values(text: str, path: str, found: list[Finding]) -> str:
    """Server and login names given to a tool on its command line."""

    def one(match: re.Match[str]) -> str:
        value = match.group("value")
        is_user = (
            "u"
            in (
                match.group("long") or match.group("short") or match.group("keyword") or ""
            ).lower()[:1]
        )
        if value in PLACEHOLDERS or value.startswith("/") or value.startswith("$"):
            return match.group(0)
        if is_user:
            if value.lower() in PUBLIC_USER_NAMES:
                return match.group(0)
            kind, replacement = "user_name", USER_NAME
        else:
            if value.lower() in LOCAL_HOSTS or _is_ip(value) or value.startswith("["):
                return match.group(0)  # loopback, or an address the IP rule replaces
            kind, replacement = "host_name", HOST_NAME
        found.append(Finding(kind, path, replacement, value))
        return match.group("option") + replacement

    return _OPTION_VALUE.sub(one, text)


def _word(name: str) -> re.Pattern[str]:
    """``name`` as a word; a long one also between hyphens ("6.1.0-alice-laptop"), a
    short one only alone, so that a host "vm" leaves "cloud-vm" in a kernel name."""
    if len(name) >= 6:
        return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)", re.IGNORECASE)
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", re.IGNORECASE)


def _user_word(name: str) -> re.Pattern[str]:
    """``name`` wherever it is a token of its own or a part of one between
    other characters than letters and digits: "application_name=alice-laptop",
    "alice_dev", "/srv/alice/": ``--show-redacted`` promises the user name is
    always removed, whatever its length. Not inside a longer word ("malice")."""
    return re.compile(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", re.IGNORECASE)


def _is_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    # Loopback and the unspecified address name no machine.
    return not (address.is_loopback or address.is_unspecified)


def _firebird_dsn(dsn: str, fs: Callable[[str], str | None]) -> str | None:
    """The DSN with its database file reduced to the filesystem it lives on."""
    parts = urlsplit(dsn)
    path = unquote(parts.path[1:] if parts.path.startswith("//") else parts.path)
    if not path or path.startswith("FILE_ON_"):
        return None
    filesystem = fs(path) if path.startswith("/") else None
    place = f"FILE_ON_{filesystem.upper()}" if filesystem else "FILE"
    return f"{parts.scheme}://{parts.netloc}/{place}"


def _filesystem_of(path: str) -> str | None:
    from . import sysinfo

    mounts = sysinfo.parse_mountinfo(sysinfo.read_text("/proc/self/mountinfo") or "")
    mount = sysinfo.mount_for(os.path.realpath(path), mounts)
    return re.sub(r"\W", "_", mount.fstype) if mount else None
