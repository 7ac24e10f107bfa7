"""``--vary dsn``, ``--vary protocol``, ``--vary pin``: which server a cell's runs drive,
over which connection, from which CPUs.

dsn: several servers (versions or engines, seed 004's PostgreSQL against MariaDB), each
asked what it is before anything changes; the site's axis is the engine when the engines
differ, the version when one engine's versions do. protocol: one server over its unix
socket and over TCP (seeds 000 and 001), the socket and the port asked of the server,
each way connected once beforehand and checked to be the protocol the server sees.
pin: the load's CPU placement as ``--pin`` sets it for a run, and unpinned.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from typing import Any
from urllib.parse import quote

from .. import db
from ..benchmarks import _connections as dbc
from ..placement import PLACEMENTS
from ..target import Target
from .machine import StudyError

PROTOCOLS = ("unix_socket", "tcp_loopback")
PINS = (*PLACEMENTS, "unpinned")
LOOPBACK = "127.0.0.1"


def canonical(factor: str, level: str, names: tuple[str, ...]) -> str:
    """``same-core`` and ``same_core`` alike: the name a run records."""
    name = level.strip().lower().replace("-", "_")
    if name not in names:
        raise StudyError(f"--vary {factor}: {level!r} is not one of {', '.join(names)}")
    return name


# --- dsn -------------------------------------------------------------------------------


def version_of(version_string: str) -> str:
    """The release number as the site reads it: PostgreSQL 15.20, MariaDB 10.11.6 (after
    the 5.5.5- that old clients need), Firebird 3.0.11 (the build number left off)."""
    text = re.sub(r"^5\.5\.5-", "", version_string.strip())
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)", text)
    return found.group(1) if found else version_string.strip()


def identify(target: Target) -> tuple[str, str]:
    """(engine, version) as the server itself says; Firebird through its service
    manager, which needs no database file."""
    try:
        if target.engine == "firebird":
            from ..benchmarks import _firebird as fb

            text = fb.server_version(fb.FirebirdDatabase.from_target(target))
            return "firebird", version_of(text)
        info = db.describe(target)
    except StudyError:
        raise
    except Exception as exc:  # the driver's refusal, in its words
        raise StudyError(
            f"--vary dsn: {target.redacted()} does not answer: {_message(exc)}"
        ) from exc
    return info.engine, version_of(info.version_string)


def _message(exc: Exception) -> str:
    return " ".join(dbc.db_errors.driver_message(exc).split()) or type(exc).__name__


def dsn_servers(levels: list[str]) -> tuple[str, dict[str, Target]]:
    """The site's axis (engine or version) and {label: target}, in the order given."""
    if len(levels) < 2:
        raise StudyError("--vary dsn: two or more servers, e.g. 'postgresql://…;mysql://…'")
    targets = []
    for text in levels:
        try:
            targets.append(Target.parse(text))
        except ValueError as exc:
            raise StudyError(f"--vary dsn: {exc}") from exc
    found = [identify(target) for target in targets]
    engines = [engine for engine, _ in found]
    versions = [version for _, version in found]
    if len(set(engines)) == len(engines):
        axis, labels = "engine", engines
    elif len(set(versions)) == len(versions):
        axis, labels = "version", versions
    else:
        twice = next(f for f in found if found.count(f) > 1)
        names = [t.redacted() for t, f in zip(targets, found, strict=True) if f == twice]
        raise StudyError(
            f"--vary dsn: {' and '.join(names)} are both {twice[0]} {twice[1]}: neither the "
            "engine nor the version would vary between them (--vary config varies settings)"
        )
    return axis, dict(zip(labels, targets, strict=True))


# --- protocol ----------------------------------------------------------------------------


def protocol_levels(given: list[str]) -> list[str]:
    levels = [canonical("protocol", level, PROTOCOLS) for level in given] or list(PROTOCOLS)
    if len(levels) < 2:
        raise StudyError("--vary protocol: two ways to connect, e.g. 'unix_socket;tcp_loopback'")
    return levels


def connections(target: Target, levels: list[str]) -> dict[str, Target]:
    """{protocol: the target that connects so}, each tried and its protocol checked."""
    if target.engine == "firebird":
        raise StudyError(
            "--vary protocol: the agent reaches Firebird over TCP only (its other way, the "
            "embedded engine, opens the file without the server)"
        )
    socket, port = _endpoints(target)
    found = {}
    for level in levels:
        if level == "unix_socket" and not socket:
            raise StudyError(
                f"--vary protocol: the {target.engine} server of --dsn has no unix socket"
            )
        via = _via(target, level, socket, port)
        where = via.socket if level == "unix_socket" else f"{via.host}:{via.port}"
        try:
            seen = db.describe(via).protocol
        except Exception as exc:  # refused: pg_hba.conf, skip_networking, a user for TCP
            raise StudyError(
                f"--vary protocol: the server does not answer over {level} ({where}): "
                f"{_message(exc)}"
            ) from exc
        if seen != level:
            raise StudyError(
                f"--vary protocol: connecting to {where} the server sees {seen}, not {level}"
            )
        found[level] = via
    return found


def _endpoints(target: Target) -> tuple[str | None, int]:
    """The server's unix socket (PostgreSQL: its folder) and its TCP port."""
    conn = db.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute(
                    "SELECT current_setting('unix_socket_directories'), current_setting('port')"
                )
                folders, port = cur.fetchone()
                folder = next((f.strip() for f in folders.split(",") if f.strip()), None)
                return folder, int(port)
            cur.execute("SELECT @@socket, @@port")
            socket, port = cur.fetchone()
            return socket or None, int(port)
    finally:
        conn.close()


def _via(target: Target, protocol: str, socket: str | None, port: int) -> Target:
    if protocol == "unix_socket":
        changed = dataclasses.replace(target, host=None, socket=socket, port=port)
    else:
        host = target.host if target.host and not target.socket else LOOPBACK
        changed = dataclasses.replace(target, host=host, socket=None, port=port)
    return dataclasses.replace(changed, dsn=dsn_of(changed))


def dsn_of(target: Target) -> str:
    """A DSN that connects as ``target`` does (shown, and redacted, in what is recorded)."""
    scheme = "postgresql" if target.engine == "postgresql" else "mysql"
    auth = quote(target.user or "", safe="")
    if target.password:
        auth += ":" + quote(target.password, safe="")
    host = "" if target.socket else (target.host or "")
    if target.port and not target.socket:
        host += f":{target.port}"
    query = ""
    if target.socket:
        name = "host" if target.engine == "postgresql" else "unix_socket"
        query = f"?{name}={quote(target.socket, safe='/')}"
        if target.engine == "postgresql" and target.port:
            query += f"&port={target.port}"
    return f"{scheme}://{auth + '@' if auth else ''}{host}/{quote(target.database)}{query}"


def reconnect(placed: Target, via: Target) -> Target:
    """The cell's target (its database, its DATA DIRECTORY) reached as ``via`` is."""
    moved = dataclasses.replace(
        placed, host=via.host, port=via.port, socket=via.socket, options=dict(via.options)
    )
    return dataclasses.replace(moved, dsn=dsn_of(moved))


# --- pin ---------------------------------------------------------------------------------


def pin_levels(given: list[str], module: Any, args: argparse.Namespace) -> list[str]:
    if "pin" not in getattr(module, "LOAD_OPTIONS", ()):
        raise StudyError(
            f"--vary pin: {module.NAME} does not place its load on CPUs (select-update and "
            "backup do)"
        )
    if getattr(args, "pin", None):
        raise StudyError("--pin and --vary pin: the placement is what varies; drop --pin")
    levels = [canonical("pin", level, PINS) for level in given] or list(PINS)
    if len(levels) < 2:
        raise StudyError("--vary pin: two placements or more, e.g. 'same_core;other_core'")
    if "other_core" in levels and len(os.sched_getaffinity(0)) < 2:
        raise StudyError("--vary pin: other_core needs two CPUs or more, this agent has one")
    return levels


def pin_option(level: str) -> str | None:
    """What ``--pin`` is for a cell: unpinned is no --pin at all."""
    return None if level == "unpinned" else level
