"""select-update's table, and its transaction, one class per engine: SELECT a row, UPDATE it + 1.

Both raise :class:`Retryable` for what the transaction may be run again after
(serialization failure, deadlock, lock wait timeout), :class:`Failed` for what
fails for good on a still usable connection, and ConnectionError when the
connection itself is gone.
"""

from __future__ import annotations

import ctypes
import math
import time
from array import array
from collections import Counter
from typing import TYPE_CHECKING, Any, NoReturn

from .. import db
from ._pg_event_loop import (
    MAX_ATTEMPTS,
    MISSING_ROW,
    RETRYABLE_SQLSTATES,
    ClientTally,
    given_up,
)
from .base import Target

if TYPE_CHECKING:
    from . import select_update

ROWS = 100
TABLE = "benchhub_select_update"


class Retryable(Exception):
    """Serialization failure, deadlock or lock wait timeout: run the transaction again."""


class Failed(Exception):
    """The transaction failed for good; the connection is still usable."""


class PostgresClient:
    """One connection driving the transaction through prepared statements.

    The libpq calls are made directly on psycopg's ``pgconn``: the four
    statements of a transaction then cost about as much Python as pgbench
    costs C, which the agent_overhead benchmark checks. The UPDATE adds the 1
    itself, as pgbench's script does (``SET c2 = :v + 1``): the value read is
    passed back as the bytes the server sent, never parsed in Python.
    """

    def __init__(self, target: Target, locking: str) -> None:
        from psycopg import pq

        self.pq = pq
        self.conn = db.connect_postgresql(target, autocommit=True)
        self.pgconn = self.conn.pgconn
        lock = " FOR UPDATE" if locking == "for_update" else ""
        # TABLE is a constant of this module: nothing user-supplied reaches the SQL text.
        statements = {
            b"bh_begin": b"BEGIN",
            b"bh_select": f"SELECT c2 FROM {TABLE} WHERE c1 = $1{lock}".encode(),  # noqa: S608
            b"bh_update": f"UPDATE {TABLE} SET c2 = $1 + 1 WHERE c1 = $2".encode(),  # noqa: S608
            b"bh_commit": b"COMMIT",
            b"bh_rollback": b"ROLLBACK",
        }
        for name, sql in statements.items():
            result = self.pgconn.prepare(name, sql)
            if result.status != pq.ExecStatus.COMMAND_OK:
                raise RuntimeError(result.get_error_message())
        self.keys = [str(key).encode() for key in range(1, ROWS + 1)]
        self.ok_status = int(pq.ExecStatus.COMMAND_OK)
        self.tuples_status = int(pq.ExecStatus.TUPLES_OK)

    def backend_pid(self) -> int:
        return self.pgconn.backend_pid

    def transaction(self, key: int) -> None:
        # The hot path of a lone client: statuses compared as plain ints, the error
        # path only called on an error (10 µs of Python less per transaction).
        execute = self.pgconn.exec_prepared
        ok = self.ok_status
        param = self.keys[key - 1]
        result = execute(b"bh_begin", None)
        if result.status != ok:
            self._fail(result)
        selected = execute(b"bh_select", [param])
        if selected.status != self.tuples_status:
            self._fail(selected)
        if selected.ntuples != 1:
            execute(b"bh_rollback", None)
            raise Failed(MISSING_ROW % key)
        result = execute(b"bh_update", [selected.get_value(0, 0), param])
        if result.status != ok:
            self._fail(result)
        result = execute(b"bh_commit", None)
        if result.status != ok:
            self._fail(result)

    def run_alone(
        self,
        quota: int | None,
        window: tuple[float, float | None],
        rng: Any,
        progress: Any,
        slot: int,
        stop: Any,
    ) -> ClientTally:
        """This client's whole run, as ``select_update._client_loop`` runs the others.

        The same transactions, retries and counts, with nothing per transaction but
        what the transaction needs: four libpq calls, one random draw, two clock
        reads, and the latency counted in a plain dict (folded into the histogram at
        the end). At one client the agent's own CPU is on every transaction's path:
        what it spends, the transaction waits for. ``stop`` (another client of the
        process failed) and the progress counter are looked at every 16 transactions.
        """
        tally = ClientTally()
        latencies: dict[int, int] = {}
        seen = latencies.get
        window_start, deadline = window
        execute = self.pgconn.exec_prepared
        ok = self.ok_status  # a row read is the SELECT's success (PostgresFlow.steps)
        selects = [(key,) for key in self.keys]  # the SELECT's parameters, made once per key
        # Floats and floor(), as the event loop draws (PostgresFlow.steps says why).
        keys, rows = self.keys, float(len(self.keys))
        draw = rng.random  # uniform over the rows, as randint(1, ROWS), in one C call
        clock, whole = time.perf_counter, math.floor
        if deadline is None:
            deadline = math.inf
        done = committed = failed_in_a_row = 0
        while quota is None or done < quota:
            if (began := clock()) >= deadline:
                break
            index = whole(draw() * rows)
            param = keys[index]
            attempts = 0
            while True:
                if (
                    (result := execute(b"bh_begin", None)).status == ok
                    and (result := execute(b"bh_select", selects[index])).ntuples == 1
                    and (result := execute(b"bh_update", (result.get_value(0, 0), param))).status
                    == ok
                    and (result := execute(b"bh_commit", None)).status == ok
                ):
                    ended = clock()
                    committed += 1
                    failed_in_a_row = 0
                    if window_start <= ended <= deadline:
                        micros = whole((ended - began) * 1e6)
                        latencies[micros] = seen(micros, 0) + 1
                    break
                failure = self._roll_back(result, index + 1)
                if failure is None:  # retryable: the same key again, up to MAX_ATTEMPTS runs
                    tally.retries += 1
                    attempts += 1
                    if attempts < MAX_ATTEMPTS:
                        continue
                failed_in_a_row = given_up(tally, failure, failed_in_a_row)
                break
            done += 1
            if done & 15 == 0:
                progress[slot] = done
                if stop.is_set():
                    break
        progress[slot] = done
        tally.committed = committed
        tally.histogram.record_counts(latencies)
        tally.ended_at = clock()
        return tally

    def _roll_back(self, result: Any, key: int) -> str | None:
        """Roll back the transaction whose statement gave ``result``: None when it may be
        run again (serialization failure, deadlock, lock timeout), else why it failed.
        A connection that is gone raises ConnectionError."""
        if result.status == self.tuples_status:  # the SELECT found no row
            failure: str | None = MISSING_ROW % key
        else:
            state = result.error_field(self.pq.DiagnosticField.SQLSTATE) or b""
            failure = result.get_error_message()
            if self.pgconn.status != self.pq.ConnStatus.OK:
                raise ConnectionError(failure)
            if state in RETRYABLE_SQLSTATES:
                failure = None
        self.pgconn.exec_prepared(b"bh_rollback", None)
        return failure

    def _fail(self, result: Any) -> NoReturn:
        state = result.error_field(self.pq.DiagnosticField.SQLSTATE) or b""
        message = result.get_error_message()
        if self.pgconn.status != self.pq.ConnStatus.OK:
            raise ConnectionError(message)
        self.pgconn.exec_prepared(b"bh_rollback", None)
        if state in RETRYABLE_SQLSTATES:
            raise Retryable(message)
        raise Failed(message)

    def close(self) -> None:
        self.conn.close()


class MySQLClient:
    """One connection, autocommit off: the SELECT … FOR UPDATE, the UPDATE, COMMIT (three
    round trips, as text: neither driver has the binary protocol).

    Through ``mysqlclient`` (MariaDB's C client library: C parsing, the GIL released for
    the whole round trip) when it is installed, else PyMySQL, whose protocol code runs
    in Python under the GIL: 0.69-0.81 x sysbench at 1-32 clients on two vCPUs.
    """

    RETRYABLE = (1205, 1213)  # lock wait timeout, deadlock
    GONE = (2006, 2013)  # server gone / lost connection

    def __init__(self, target: Target, locking: str, driver: str = "pymysql") -> None:
        args = db.mysql_connect_args(target)
        if driver == "mysqlclient":
            import MySQLdb

            self.errors = MySQLdb
            self.conn = MySQLdb.connect(**args, autocommit=False)
            # Bound once: each attribute read on a MySQLdb connection goes through its
            # own getattro, ~300 instructions, on every transaction's path otherwise.
            query, store_result = self.conn.query, self.conn.store_result

            def select(sql: bytes) -> tuple[Any, ...]:
                query(sql)
                return store_result().fetch_row()

        else:
            self.errors = db.mysql_module().err
            self.conn = db.mysql_module().connect(**args, autocommit=False)
            cursor = self.conn.cursor()

            def select(sql: bytes) -> tuple[Any, ...]:
                cursor.execute(sql)
                return cursor.fetchall()

        self.select = select
        self.query, self.commit = self.conn.query, self.conn.commit
        lock = " FOR UPDATE" if locking == "for_update" else ""
        # Keys and values are ints formatted with %d: nothing to escape, nothing injected.
        select_sql = f"SELECT c2 FROM {TABLE} WHERE c1 = %d{lock}".encode()  # noqa: S608
        # One SELECT per key, made once (index: the key; 0 is never drawn).
        self.selects = [select_sql % key for key in range(ROWS + 1)]
        self.update_sql = f"UPDATE {TABLE} SET c2 = %d WHERE c1 = %d".encode()  # noqa: S608

    def backend_pid(self) -> int | None:
        return None  # one server process for all connections: pinned as a whole

    def transaction(self, key: int) -> None:
        try:
            rows = self.select(self.selects[key])
            if not rows:
                self.conn.rollback()
                raise Failed(MISSING_ROW % key)
            self.query(self.update_sql % (int(rows[0][0]) + 1, key))
            self.commit()
        except self.errors.OperationalError as exc:
            code = exc.args[0] if exc.args else 0
            if code in self.GONE:
                raise ConnectionError(str(exc)) from exc
            self.conn.rollback()
            if code in self.RETRYABLE:
                raise Retryable(str(exc)) from exc
            raise Failed(str(exc)) from exc
        except self.errors.MySQLError as exc:
            self.conn.rollback()
            raise Failed(str(exc)) from exc

    def close(self) -> None:
        self.conn.close()


class FirebirdClient:
    """One attachment through the client library's ISC API (:mod:`..firebird_isc`), its
    two statements prepared once: the SELECT … WITH LOCK (Firebird's row lock; FOR
    UPDATE alone only names a cursor), the UPDATE, COMMIT. READ COMMITTED and waiting for
    locks, as PostgreSQL; a row another client changed while this one waited is an
    update conflict (SQLSTATE 40001), retried.

    The statements' values are C ints in one array (the key, the value read, the value
    written; the UPDATE's key is the SELECT's), and a transaction is the library's four
    calls with two integers written and one read between them, as firebird_floor.c's:
    the Python around those calls was half the agent's CPU on this load. Where the agent's
    one compiled module is built, those calls run in C (:func:`compiled_loop`), chunk by
    chunk of keys drawn here; else in :meth:`run_alone`'s own Python loop."""

    KEY, READ, WRITTEN = 0, 1, 2  # slots in the values array
    CHUNK = 16  # keys a call of the compiled loop runs; stop and progress are read between

    def __init__(self, target: Target, locking: str) -> None:
        from .. import firebird_db, firebird_isc

        self.retryable = firebird_db.RETRYABLE_SQLSTATES
        self.stream_eof = firebird_isc.STREAM_EOF
        self.session = firebird_isc.Session(target)
        self.values = (ctypes.c_int * 3)()
        self.view = memoryview(self.values).cast("B").cast("i")  # item access without ctypes
        lock = " WITH LOCK" if locking == "for_update" else ""
        # TABLE is a constant of this module: nothing user-supplied reaches the SQL text.
        prepare, values = self.session.prepare, self.values
        self.select = prepare(
            f"SELECT c2 FROM {TABLE} WHERE c1 = ?{lock}",  # noqa: S608
            integers=(values, (self.KEY,), (self.READ,)),  # c2 is NOT NULL: no indicator
        )
        self.update = prepare(
            f"UPDATE {TABLE} SET c2 = ? WHERE c1 = ?",  # noqa: S608
            integers=(values, (self.WRITTEN, self.KEY), ()),
        )

    def backend_pid(self) -> int | None:
        return None  # SuperServer: one process for all connections, pinned as a whole

    def transaction(self, key: int) -> None:
        view = self.view
        view[self.KEY] = key
        if not self.session.begin_call() and not self.select.run():
            view[self.WRITTEN] = view[self.READ] + 1
            if not self.update.run() and not self.session.commit_call():
                return
        failure, retryable = self._roll_back(key)
        raise (Retryable if retryable else Failed)(failure)

    def run_alone(
        self,
        quota: int | None,
        window: tuple[float, float | None],
        rng: Any,
        progress: Any,
        slot: int,
        stop: Any,
    ) -> ClientTally:
        """This client's whole run, as ``select_update._client_loop`` runs MySQL's: the same
        transactions, retries, counts and latencies, with the library's calls inline."""
        loop = compiled_loop()
        if loop is not None:
            return self._run_compiled(loop, quota, window, rng, progress, slot, stop)
        tally = ClientTally()
        latencies: dict[int, int] = {}
        seen = latencies.get
        window_start, deadline = window
        if deadline is None:  # a number of transactions: every one is measured
            window_start, deadline = -math.inf, math.inf
        view, key_slot, read, written = self.view, self.KEY, self.READ, self.WRITTEN
        begin, commit = self.session.begin_call, self.session.commit_call
        select, update = self.select.run, self.update.run
        draw, rows = rng.random, float(ROWS)  # floor(random() * rows): int(), one call less
        clock, whole, stopped = time.perf_counter, math.floor, stop.is_set
        done = committed = failed_in_a_row = 0
        while quota is None or done < quota:
            if (began := clock()) >= deadline or (done & 15 == 0 and stopped()):
                break
            view[key_slot] = whole(draw() * rows) + 1
            attempts = 0
            while True:
                if not begin() and not select():
                    view[written] = view[read] + 1
                    if not update() and not commit():
                        ended = clock()
                        committed += 1
                        failed_in_a_row = 0
                        if window_start <= ended <= deadline:
                            micros = whole((ended - began) * 1e6)
                            latencies[micros] = seen(micros, 0) + 1
                        break
                failure, retryable = self._roll_back(view[key_slot])
                if retryable:  # the same key again, up to MAX_ATTEMPTS runs
                    tally.retries += 1
                    attempts += 1
                    if attempts < MAX_ATTEMPTS:
                        continue
                failed_in_a_row = given_up(tally, None if retryable else failure, failed_in_a_row)
                break
            done += 1
            if done & 15 == 0:
                progress[slot] = done
        progress[slot] = done
        tally.committed = committed
        tally.histogram.record_counts(latencies)
        tally.ended_at = clock()
        return tally

    def _run_compiled(
        self,
        loop: Any,
        quota: int | None,
        window: tuple[float, float | None],
        rng: Any,
        progress: Any,
        slot: int,
        stop: Any,
    ) -> ClientTally:
        """:meth:`run_alone` with the transactions in C: the keys are drawn here, as many
        and in the same order as the Python loop draws them, and every failure comes back
        here to be rolled back, retried or given up the same way."""
        tally = ClientTally()
        latencies: Counter[int] = Counter()
        window_start, deadline = window
        if deadline is None:  # a number of transactions: every one is measured
            window_start, deadline = -math.inf, math.inf
        session = self.session
        addresses = (
            *session.call_addresses(),
            *self.select.addresses(),
            *self.update.addresses()[:2],  # the UPDATE returns no row
            ctypes.addressof(self.values),
        )
        keys, micros = array("i", bytes(4 * self.CHUNK)), array("q", bytes(8 * self.CHUNK))
        draw, rows, whole = rng.random, float(ROWS), math.floor
        clock, stopped = time.perf_counter, stop.is_set
        done = committed = failed_in_a_row = 0
        running = True
        while running and (quota is None or done < quota) and not stopped():
            end = self.CHUNK if quota is None else min(self.CHUNK, quota - done)
            for index in range(end):
                keys[index] = whole(draw() * rows) + 1
            at, attempts, began_ago = 0, 0, 0.0
            while at < end:
                called = clock()
                ran, failed = loop.run(
                    addresses, keys, micros, at, end, began_ago,
                    deadline - called, window_start - called,
                )  # fmt: skip
                latencies.update(micros[at:ran])
                committed += ran - at
                done += ran - at
                if ran > at:
                    failed_in_a_row, attempts, began_ago = 0, 0, 0.0
                if not failed:
                    running = ran == end  # else the time is up
                    break
                failure, retryable = self._roll_back(keys[ran])
                if retryable:  # the same key again, up to MAX_ATTEMPTS runs
                    tally.retries += 1
                    attempts += 1
                    if attempts < MAX_ATTEMPTS:
                        # Its latency counts from the first attempt, as in run_alone's loop.
                        began_ago = (clock() - called) - micros[ran] / 1e6
                        at = ran
                        continue
                failed_in_a_row = given_up(tally, None if retryable else failure, failed_in_a_row)
                done += 1
                at, attempts, began_ago = ran + 1, 0, 0.0
            progress[slot] = done
        latencies.pop(-1, None)  # committed outside the window
        tally.committed = committed
        tally.histogram.record_counts(latencies)
        tally.ended_at = clock()
        return tally

    def _roll_back(self, key: int) -> tuple[str, bool]:
        """Roll back the transaction whose call failed: why, and whether it may be run again
        (an update conflict). A connection that is gone raises ConnectionError."""
        session = self.session
        if session.status[1] == self.stream_eof:  # the SELECT found no row
            session.rollback()
            return MISSING_ROW % key, False
        error = session.error()
        if str(error.sqlstate or "").startswith("08"):
            raise ConnectionError(str(error))
        session.rollback()
        return str(error), error.sqlstate in self.retryable

    def close(self) -> None:
        self.session.close()


def compiled_loop() -> Any:
    """The agent's compiled Firebird loop (benchmarks/_firebird_loop.c), or None where it
    was not built (no C compiler or Python headers at install, Windows)."""
    try:
        from . import _firebird_loop
    except ImportError:
        return None
    return _firebird_loop


def firebird_loop_note() -> str:
    """Which loop ran a Firebird run's transactions: the agent's CPU differs, not the
    server's work."""
    if compiled_loop() is None:
        return (
            "Firebird clients: transactions run by the agent's Python loop (its compiled "
            "loop was not built when the agent was installed: no C compiler or Python headers)."
        )
    return "Firebird clients: transactions run by the agent's compiled loop (C)."


def open_client(
    target: Target, locking: str, mysql_driver: str = "pymysql"
) -> PostgresClient | MySQLClient | FirebirdClient:
    if target.engine == "postgresql":
        return PostgresClient(target, locking)
    if target.engine == "firebird":
        return FirebirdClient(target, locking)
    return MySQLClient(target, locking, mysql_driver)


# --- table ----------------------------------------------------------------


def reset_table(target: Target) -> None:
    """A fresh table for each point, so no point inherits another's bloat."""
    conn = db.connect(target, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
        engine = ""
        if target.engine in ("mysql", "mariadb"):
            engine = " ENGINE=InnoDB"
            if target.data_directory:  # a study's directory, checked for quotes there
                engine += f" DATA DIRECTORY='{target.data_directory}'"
        cur.execute(f"CREATE TABLE {TABLE} (c1 int PRIMARY KEY, c2 int NOT NULL){engine}")
        if target.engine == "firebird":
            # Firebird 3 has no multi-row VALUES; its primary key index needs no statistics
            # for the lookups by key.
            insert = f"INSERT INTO {TABLE} (c1, c2) VALUES (:k, 0)"  # noqa: S608 - constants
            cur.execute(
                "EXECUTE BLOCK AS DECLARE k int = 1; BEGIN"
                f" WHILE (k <= {ROWS}) DO BEGIN {insert}; k = k + 1; END END"
            )
            cur.close()
            return
        values = ", ".join(f"({key}, 0)" for key in range(1, ROWS + 1))
        cur.execute(f"INSERT INTO {TABLE} (c1, c2) VALUES {values}")  # noqa: S608 — ints only
        if target.engine == "postgresql":
            cur.execute(f"ANALYZE {TABLE}")
        else:
            cur.execute(f"ANALYZE TABLE {TABLE}")
            cur.fetchall()
        cur.close()
    finally:
        conn.close()


def table_total(target: Target) -> int:
    conn = db.connect(target, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT COALESCE(SUM(c2), 0), COUNT(*) FROM {TABLE}")  # noqa: S608
        total, rows = cur.fetchone()
        cur.close()
    finally:
        conn.close()
    if rows != ROWS:
        raise RuntimeError(f"select-update: the table has {rows} rows instead of {ROWS}")
    return int(total)


def invariant_note(points: dict[int, list[select_update.PointResult]], locking: str) -> str:
    """What the table check at the end of every point found (it stops the run if broken)."""
    checked = [r for reps in points.values() for r in reps]
    committed = sum(r.committed for r in checked)
    if locking == "for_update":
        return (
            f"invariant held: sum(c2) = committed transactions after each of the "
            f"{len(checked)} points ({committed} commits in all; FOR UPDATE lost none)."
        )
    lost = sum(r.lost_updates for r in checked)
    return (
        f"invariant not expected without locking: {lost} of {committed} committed "
        f"increments lost over {len(checked)} points (lost_updates)."
    )
