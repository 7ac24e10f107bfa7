"""``--vary config 'default;fast:synchronous_commit=off,commit_delay=100'``: named server
settings, applied before each cell and restored afterwards.

PostgreSQL: ALTER SYSTEM and a reload (the study waits until a new connection
sees the reload); a setting that needs a restart (context postmaster) is
refused, unless ``--restart-command CMD`` is given: then the setting is
written, CMD restarts the server, the study waits until it answers with the
value, and the same again when the original is put back. MariaDB/MySQL: SET
GLOBAL; a read-only variable is refused (a restart would not help: the agent
does not edit option files). Each run records its profile's name
(``config_profile``) and the values it set.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

from .. import db
from ..target import Target
from .machine import Changes, StudyError

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,60}$")
_SETTING = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,62}$")
_BARE_VALUE = re.compile(r"^(-?\d+(\.\d+)?|[A-Za-z_][A-Za-z0-9_]*)$")
RELOAD_WAIT_S = 10.0
RESTART_WAIT_S = 120.0
# A restart command may return before the server goes down: how long the old one may answer.
SAME_SERVER_WAIT_S = 10.0


def parse(levels: list[str]) -> dict[str, dict[str, str]]:
    """{profile: {setting: value}}; one profile may set nothing (the server as it is)."""
    if len(levels) < 2:
        raise StudyError(
            "--vary config: two or more profiles, e.g. 'default;fast:commit_delay=100'"
        )
    profiles: dict[str, dict[str, str]] = {}
    for level in levels:
        name, _, body = level.partition(":")
        name = name.strip()
        if not _NAME.match(name):
            raise StudyError(f"--vary config: {name!r} is no profile name (letters, digits, _.-)")
        if name in profiles:
            raise StudyError(f"--vary config: profile {name} named twice")
        settings: dict[str, str] = {}
        for pair in filter(None, (p.strip() for p in body.split(","))):
            setting, sep, value = pair.partition("=")
            if not sep or not _SETTING.match(setting.strip()) or not value.strip():
                raise StudyError(f"--vary config: {pair!r} in {name} is not setting=value")
            settings[setting.strip().lower()] = value.strip()
        profiles[name] = settings
    plain = [name for name, settings in profiles.items() if not settings]
    if len(plain) > 1:
        raise StudyError(
            f"--vary config: {' and '.join(plain)} set nothing: both are the server as it is"
        )
    return profiles


def check(
    target: Target, profiles: dict[str, dict[str, str]], restart_command: str | None = None
) -> set[str]:
    """Every setting known to the server and changeable: without a restart, or with
    ``restart_command`` (PostgreSQL); the names that need the restart."""
    names = sorted({name for settings in profiles.values() for name in settings})
    if not names:
        return set()
    if target.engine == "firebird":
        raise StudyError(
            "--vary config: Firebird 3 reads its settings from firebird.conf when it starts; "
            "the agent does not edit it"
        )
    restart: set[str] = set()
    conn = db.connect(target)
    try:
        with conn.cursor() as cur:
            for name in names:
                if target.engine == "postgresql":
                    cur.execute("SELECT context FROM pg_settings WHERE name = %s", (name,))
                    row = cur.fetchone()
                    fixed = row is not None and row[0] == "internal"
                    if row is not None and row[0] == "postmaster":
                        restart.add(name)
                else:
                    row, fixed = mysql_setting(cur, name)
                if row is None:
                    raise StudyError(f"--vary config: the server has no setting {name}")
                if fixed:
                    raise StudyError(
                        f"--vary config: {name} is set only where the server starts (its "
                        "option file or build); a study does not change it"
                    )
                if name in restart and not restart_command:
                    raise StudyError(
                        f"--vary config: {name} takes effect only when the server restarts; "
                        "a study restarts it only with --restart-command CMD"
                    )
    finally:
        conn.close()
    return restart


def _mysql_value(conn: Any, value: Any) -> str:
    """A value as SET GLOBAL takes it: a number or word bare, NULL (a string variable
    that was unset), anything else quoted by the driver."""
    if value is None:
        return "NULL"
    return str(value) if _BARE_VALUE.match(str(value)) else conn.escape(value)


# MySQL's error for SET of a read-only variable, and for a variable it does not have.
_READ_ONLY, _UNKNOWN = 1238, 1193


def mysql_setting(cur: Any, name: str) -> tuple[tuple | None, bool]:
    """(a row if the server has the global variable ``name``, whether it is read-only).
    MariaDB says so in information_schema.SYSTEM_VARIABLES; MySQL has no such table, so
    the variable is set to its own value, which the server refuses for a read-only one."""
    cur.execute("SELECT VERSION()")
    if "mariadb" in str(cur.fetchone()[0]).lower():
        cur.execute(
            "SELECT READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = %s",
            (name.upper(),),
        )
        row = cur.fetchone()
        return row, row is not None and row[0] == "YES"
    return probe_by_setting(cur, name)


def probe_by_setting(cur: Any, name: str) -> tuple[tuple | None, bool]:
    """MySQL's way (tested on MariaDB, which answers the same errors)."""
    try:
        cur.execute(f"SET GLOBAL {name} = @@GLOBAL.{name}")  # name checked by parse()
    except Exception as exc:  # the driver's OperationalError, its errno first
        code = exc.args[0] if exc.args else None
        if code == _UNKNOWN:
            return None, False
        if code == _READ_ONLY:
            return (name,), True
        raise
    return (name,), False


class Settings:
    """Applies a profile's settings; the first change of each registers its restore."""

    def __init__(
        self,
        target: Target,
        profiles: dict[str, dict[str, str]],
        changes: Changes,
        restart: set[str] | None = None,
        restart_command: str | None = None,
    ):
        self.target, self.profiles, self.changes = target, profiles, changes
        self.names = sorted({name for settings in profiles.values() for name in settings})
        self.original: dict[str, Any] | None = None
        self.restart, self.restart_command = restart or set(), restart_command
        self.current: dict[str, Any] = {}  # what was last written, to restart only on a change

    @classmethod
    def restorer(
        cls,
        target: Target,
        original: dict[str, Any],
        restart: set[str],
        restart_command: str | None,
    ) -> Settings:
        """For a study that was killed: puts back ``original``, restarting the server if
        any of ``restart`` is among them (what was last set is not known)."""
        found = cls(target, {"": {}}, Changes(), restart, restart_command)
        found.names, found.original = sorted(original), dict(original)
        return found

    def apply(self, profile: str) -> None:
        if not self.names:
            return
        wanted = self.profiles[profile]
        with self.changes.made() as register:
            if self.original is None:
                self.original = self._originals()
                self.current = dict(self.original)
                register(
                    f"restore {', '.join(self.names)} on {self.target.redacted()}",
                    "restore-settings",
                    run=self.restore,
                    dsn=self.target.dsn,
                    original=self.original,
                    restart=sorted(self.restart),
                    restart_command=self.restart_command,
                )
            self._set({name: wanted.get(name, self.original[name]) for name in self.names})

    def restore(self) -> None:
        if self.original is not None:
            self._set(self.original)

    def _originals(self) -> dict[str, Any]:
        """PostgreSQL: each setting's line in postgresql.auto.conf (None: no line);
        MariaDB/MySQL: each global value."""
        conn = db.connect(self.target)
        try:
            with conn.cursor() as cur:
                if self.target.engine == "postgresql":
                    cur.execute(
                        "SELECT name, setting FROM pg_file_settings "
                        "WHERE sourcefile LIKE '%%postgresql.auto.conf' AND name = ANY(%s)",
                        (self.names,),
                    )
                    auto = dict(cur.fetchall())
                    return {name: auto.get(name) for name in self.names}
                found = {}
                for name in self.names:  # names checked against _SETTING by parse()
                    cur.execute(f"SELECT @@GLOBAL.{name}")
                    found[name] = cur.fetchone()[0]
                return found
        finally:
            conn.close()

    def _set(self, values: dict[str, Any]) -> None:
        conn = db.connect(self.target)
        try:
            with conn.cursor() as cur:
                if self.target.engine == "postgresql":
                    self._set_postgresql(cur, values)
                else:
                    for name, value in values.items():
                        cur.execute(f"SET GLOBAL {name} = {_mysql_value(conn, value)}")
        except StudyError:
            raise
        except Exception as exc:  # the server's refusal of a value, in its words
            raise StudyError(f"--vary config: {' '.join(str(exc).split())}") from exc
        finally:
            conn.close()

    def _set_postgresql(self, cur: Any, values: dict[str, Any]) -> None:
        from psycopg import sql

        changed = {name for name, value in values.items() if self.current.get(name, ...) != value}
        for name, value in values.items():
            if value is None:
                cur.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
            else:
                cur.execute(
                    sql.SQL("ALTER SYSTEM SET {} = {}").format(
                        sql.Identifier(name), sql.Literal(str(value))
                    )
                )
        self.current = dict(values)
        if changed & self.restart:
            self._restart()
            return
        cur.execute("SELECT now()")
        (before,) = cur.fetchone()
        cur.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + RELOAD_WAIT_S
        # A new connection's configuration is the postmaster's: wait until it is reloaded.
        while True:
            fresh = db.connect(self.target)
            try:
                with fresh.cursor() as check:
                    check.execute("SELECT pg_conf_load_time() >= %s", (before,))
                    if check.fetchone()[0]:
                        return
            finally:
                fresh.close()
            if time.monotonic() > deadline:
                raise StudyError("--vary config: the server did not reload its configuration")
            time.sleep(0.05)

    def _restart(self) -> None:
        """--restart-command, in a session of its own (a Ctrl-C waits for it), then the
        server asked until it answers as a server started after the command began."""
        assert self.restart_command
        started = self._start_time()
        try:
            done = subprocess.run(  # noqa: S602 — the user's own command, as they typed it
                self.restart_command,
                shell=True,
                capture_output=True,
                text=True,
                start_new_session=True,
                timeout=RESTART_WAIT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise StudyError(
                f"--restart-command did not end within {RESTART_WAIT_S:.0f} s"
            ) from exc
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[:300]
            raise StudyError(f"--restart-command exited with {done.returncode}: {said}")
        ended = time.monotonic()
        last = ""
        while time.monotonic() < ended + RESTART_WAIT_S:
            try:
                now = self._start_time()
            except Exception as exc:  # starting up: refused, or "the database system is …"
                last = " ".join(str(exc).split())
                time.sleep(0.2)
                continue
            if now != started:
                return
            if time.monotonic() > ended + SAME_SERVER_WAIT_S:
                raise StudyError(
                    f"--restart-command ended {SAME_SERVER_WAIT_S:.0f} s ago and the server "
                    f"still runs since {started}: the command did not restart this server"
                )
            time.sleep(0.2)
        raise StudyError(
            f"the server did not answer within {RESTART_WAIT_S:.0f} s of --restart-command"
            + (f": {last}" if last else "")
        )

    def _start_time(self) -> Any:
        conn = db.connect(self.target)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_postmaster_start_time()")
                return cur.fetchone()[0]
        finally:
            conn.close()


def recorded(profile: str, settings: dict[str, str], database: dict[str, Any]) -> None:
    """The run's database section names its profile and the values the profile set."""
    database["config_profile"] = profile
    if settings:
        database["settings"] = {**database.get("settings", {}), **settings}
