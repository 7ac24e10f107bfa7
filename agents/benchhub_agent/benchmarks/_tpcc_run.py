"""tpcc's five transactions (TPC-C clause 2), driven by threads over a few processes.

Each client is a terminal bound to a home warehouse (clients spread over the warehouses
in turn) that runs the transactions back to back, without keying or think time, at the
mix 45/43/4/4/4 drawn per transaction, as HammerDB's TPROC-C and sysbench-tpcc do. A
transaction that meets a serialization failure, a deadlock or a lock wait timeout is
rolled back and retried with the same inputs (each retry counted) up to ``MAX_TRIES``
times; one that still fails is an abort. 1 % of New-Orders name an unused item and are
rolled back as clause 2.4.1.4 says: they count as transactions done, not as New-Orders.

``sabotage`` is a hook for the tests: a transaction that breaks a consistency condition
on purpose, so that the check after the run can be seen to catch it.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..histogram import Histogram
from . import _connections as dbc
from ._engine_cpu import ThreadMeter, process_share
from ._tpcc_load import CUSTOMERS, DISTRICTS, ITEMS, last_name, nurand
from ._worker_processes import start_as_worker, stop
from .base import Target

WORKER_START_TIMEOUT_S = 60.0
MAX_TRIES = 10
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
# Cumulative mix (clause 5.2.3): 45 % New-Order, 43 % Payment, 4 % each of the others.
MIX = ((45, "new_order"), (88, "payment"), (92, "order_status"), (96, "delivery"))
# Each breaks one consistency condition: 1, 2 (and 3), 4.
SABOTAGES = ("payment_skips_district", "new_order_skips_an_id", "new_order_miscounts_lines")
RETRYABLE_SQLSTATES = {"40001", "40P01", "55P03"}
RETRYABLE_MYSQL = {1205, 1213}  # lock wait timeout, deadlock


class UserRollback(Exception):
    """A New-Order with an unused item: rolled back by design (clause 2.4.2.3)."""


def retryable(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in RETRYABLE_SQLSTATES:
        return True
    args = getattr(exc, "args", ())
    return bool(args) and isinstance(args[0], int) and args[0] in RETRYABLE_MYSQL


@dataclass
class Tally:
    """One client's (then one point's) figures."""

    histograms: dict[str, Histogram] = field(
        default_factory=lambda: {name: Histogram() for name in TRANSACTIONS}
    )
    new_orders: int = 0  # committed
    rollbacks: int = 0  # New-Orders rolled back on purpose
    retries: int = 0
    aborts: int = 0

    def merge(self, other: Tally) -> None:
        for name, histogram in other.histograms.items():
            self.histograms[name].merge(histogram)
        self.new_orders += other.new_orders
        self.rollbacks += other.rollbacks
        self.retries += other.retries
        self.aborts += other.aborts

    def done(self) -> int:
        return sum(h.count for h in self.histograms.values())


class Terminal:
    """One connection, one home warehouse, the five transactions."""

    def __init__(
        self,
        target: Target,
        warehouses: int,
        home: int,
        rng: random.Random,
        constants: tuple[int, int, int],
        sabotage: str | None = None,
    ) -> None:
        self.conn = self.connect(target)
        self.warehouses, self.home, self.rng = warehouses, home, rng
        self.c_last, self.c_id, self.ol_i_id = constants
        self.sabotage = sabotage

    def connect(self, target: Target) -> Any:
        return dbc.connect(target, autocommit=False)

    # --- inputs (clause 2.x.1) -----------------------------------------------------------

    def customer_id(self) -> int:
        return nurand(self.rng, 1023, 1, CUSTOMERS, self.c_id)

    def customer_last(self) -> str:
        return last_name(nurand(self.rng, 255, 0, 999, self.c_last))

    def other_warehouse(self) -> int:
        if self.warehouses == 1:
            return self.home
        other = self.rng.randint(1, self.warehouses - 1)
        return other if other < self.home else other + 1

    def inputs(self, name: str) -> tuple:
        rng, w = self.rng, self.home
        if name == "new_order":
            count = rng.randint(5, 15)
            rollback = rng.randint(1, 100) == 1
            lines = []
            for number in range(1, count + 1):
                item = nurand(rng, 8191, 1, ITEMS, self.ol_i_id)
                if rollback and number == count:
                    item = ITEMS + 1  # unused (clause 2.4.1.5)
                supply = w if rng.randint(1, 100) > 1 else self.other_warehouse()
                lines.append((item, supply, rng.randint(1, 10)))
            return (rng.randint(1, DISTRICTS), self.customer_id(), lines)
        if name == "payment":
            d = rng.randint(1, DISTRICTS)
            if rng.randint(1, 100) <= 85:
                c_w, c_d = w, d
            else:
                c_w, c_d = self.other_warehouse(), rng.randint(1, DISTRICTS)
            by_name = rng.randint(1, 100) <= 60
            customer = self.customer_last() if by_name else self.customer_id()
            return (d, c_w, c_d, customer, Decimal(rng.randint(100, 500_000)).scaleb(-2))
        if name == "order_status":
            by_name = rng.randint(1, 100) <= 60
            customer = self.customer_last() if by_name else self.customer_id()
            return (rng.randint(1, DISTRICTS), customer)
        if name == "delivery":
            return (rng.randint(1, 10),)
        return (rng.randint(1, DISTRICTS), rng.randint(10, 20))

    # --- the transactions (clause 2.4 to 2.8) -------------------------------------------

    def new_order(self, cur: Any, d: int, c: int, lines: list[tuple[int, int, int]]) -> None:
        w = self.home
        cur.execute("SELECT w_tax FROM warehouse WHERE w_id = %s", (w,))
        cur.fetchone()
        cur.execute(
            "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s FOR UPDATE",
            (w, d),
        )
        _, o_id = cur.fetchone()
        step = 2 if self.sabotage == "new_order_skips_an_id" else 1
        cur.execute(
            "UPDATE district SET d_next_o_id = d_next_o_id + %s WHERE d_w_id = %s AND d_id = %s",
            (step, w, d),
        )
        cur.execute(
            "SELECT c_discount, c_last, c_credit FROM customer"
            " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            (w, d, c),
        )
        cur.fetchone()
        all_local = int(all(supply == w for _, supply, _ in lines))
        now = dt.datetime.now()
        cur.execute(
            "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id,"
            " o_ol_cnt, o_all_local) VALUES (%s, %s, %s, %s, %s, NULL, %s, %s)",
            (
                o_id,
                d,
                w,
                c,
                now,
                len(lines) + (self.sabotage == "new_order_miscounts_lines"),
                all_local,
            ),
        )
        cur.execute(
            "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s)", (o_id, d, w)
        )
        for number, (item, supply, quantity) in enumerate(lines, 1):
            cur.execute("SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", (item,))
            found = cur.fetchone()
            if found is None:
                raise UserRollback
            price = found[0]
            cur.execute(
                f"SELECT s_quantity, s_data, s_dist_{d:02d} FROM stock"  # noqa: S608 - 1..10
                " WHERE s_w_id = %s AND s_i_id = %s FOR UPDATE",
                (supply, item),
            )
            s_quantity, _, dist_info = cur.fetchone()
            left = (
                s_quantity - quantity if s_quantity - quantity >= 10 else s_quantity - quantity + 91
            )
            cur.execute(
                "UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s,"
                " s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + %s"
                " WHERE s_w_id = %s AND s_i_id = %s",
                (left, quantity, int(supply != w), supply, item),
            )
            cur.execute(
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id,"
                " ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)"
                " VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
                (o_id, d, w, number, item, supply, quantity, quantity * price, dist_info),
            )

    def _customer_by(self, cur: Any, w: int, d: int, customer: int | str) -> int:
        """A customer's id, by id or by last name: the one at position ceil(n / 2) when
        sorted by first name (clause 2.5.2.2)."""
        if isinstance(customer, int):
            return customer
        cur.execute(
            "SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s"
            " ORDER BY c_first",
            (w, d, customer),
        )
        ids = [row[0] for row in cur.fetchall()]
        if not ids:  # a name no customer has: take one by id instead
            return self.customer_id()
        return ids[(len(ids) + 1) // 2 - 1]

    def payment(self, cur: Any, d: int, c_w: int, c_d: int, customer: Any, amount: Decimal) -> None:
        w = self.home
        cur.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", (amount, w))
        cur.execute(
            "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse"
            " WHERE w_id = %s",
            (w,),
        )
        w_name = cur.fetchone()[0]
        if self.sabotage != "payment_skips_district":
            cur.execute(
                "UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s",
                (amount, w, d),
            )
        cur.execute(
            "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district"
            " WHERE d_w_id = %s AND d_id = %s",
            (w, d),
        )
        d_name = cur.fetchone()[0]
        c = self._customer_by(cur, c_w, c_d, customer)
        cur.execute(
            "SELECT c_first, c_middle, c_last, c_balance, c_credit, c_data FROM customer"
            " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s FOR UPDATE",
            (c_w, c_d, c),
        )
        credit, c_data = cur.fetchone()[4:6]
        if credit == "BC":
            data = f"{c} {c_d} {c_w} {d} {w} {amount:.2f} | {c_data}"[:500]
            cur.execute(
                "UPDATE customer SET c_balance = c_balance - %s,"
                " c_ytd_payment = c_ytd_payment + %s, c_payment_cnt = c_payment_cnt + 1,"
                " c_data = %s WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (amount, amount, data, c_w, c_d, c),
            )
        else:
            cur.execute(
                "UPDATE customer SET c_balance = c_balance - %s,"
                " c_ytd_payment = c_ytd_payment + %s, c_payment_cnt = c_payment_cnt + 1"
                " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (amount, amount, c_w, c_d, c),
            )
        cur.execute(
            "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date,"
            " h_amount, h_data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (c, c_d, c_w, d, w, dt.datetime.now(), amount, f"{w_name}    {d_name}"[:24]),
        )

    def order_status(self, cur: Any, d: int, customer: Any) -> None:
        w = self.home
        c = self._customer_by(cur, w, d, customer)
        cur.execute(
            "SELECT c_balance, c_first, c_middle, c_last FROM customer"
            " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            (w, d, c),
        )
        cur.fetchone()
        cur.execute(
            "SELECT o_id, o_entry_d, o_carrier_id FROM orders"
            " WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s ORDER BY o_id DESC LIMIT 1",
            (w, d, c),
        )
        found = cur.fetchone()
        if found is not None:
            cur.execute(
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d"
                " FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                (w, d, found[0]),
            )
            cur.fetchall()

    def delivery(self, cur: Any, carrier: int) -> None:
        """All ten districts in one transaction, at once rather than queued (clause 2.7.2's
        deferred execution is not modelled, as in HammerDB)."""
        w, now = self.home, dt.datetime.now()
        for d in range(1, DISTRICTS + 1):
            cur.execute(
                "SELECT no_o_id FROM new_order WHERE no_w_id = %s AND no_d_id = %s"
                " ORDER BY no_o_id LIMIT 1 FOR UPDATE",
                (w, d),
            )
            found = cur.fetchone()
            if found is None:
                continue  # no undelivered order in this district (clause 2.7.4.2)
            o_id = found[0]
            cur.execute(
                "DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s",
                (w, d, o_id),
            )
            if cur.rowcount == 0:  # delivered by another terminal meanwhile
                continue
            cur.execute(
                "SELECT o_c_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
                (w, d, o_id),
            )
            c = cur.fetchone()[0]
            cur.execute(
                "UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s"
                " AND o_id = %s",
                (carrier, w, d, o_id),
            )
            cur.execute(
                "UPDATE order_line SET ol_delivery_d = %s WHERE ol_w_id = %s AND ol_d_id = %s"
                " AND ol_o_id = %s",
                (now, w, d, o_id),
            )
            cur.execute(
                "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s"
                " AND ol_o_id = %s",
                (w, d, o_id),
            )
            total = cur.fetchone()[0] or 0
            cur.execute(
                "UPDATE customer SET c_balance = c_balance + %s,"
                " c_delivery_cnt = c_delivery_cnt + 1"
                " WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                (total, w, d, c),
            )

    def stock_level(self, cur: Any, d: int, threshold: int) -> None:
        w = self.home
        cur.execute("SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s", (w, d))
        next_o_id = cur.fetchone()[0]
        cur.execute(
            "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock"
            " ON s_w_id = ol_w_id AND s_i_id = ol_i_id"
            " WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id >= %s AND ol_o_id < %s"
            " AND s_quantity < %s",
            (w, d, next_o_id - 20, next_o_id, threshold),
        )
        cur.fetchone()

    # --- one transaction, retried --------------------------------------------------------

    def choose(self) -> str:
        draw = self.rng.randint(1, 100)
        for bound, name in MIX:
            if draw <= bound:
                return name
        return "stock_level"

    def run_one(self, name: str, tally: Tally, measured: bool) -> None:
        inputs = self.inputs(name)
        body = getattr(self, name)
        started = time.perf_counter()
        for attempt in range(MAX_TRIES):
            try:
                self.attempt(body, inputs)
            except UserRollback:
                self.conn.rollback()
                if measured:
                    tally.rollbacks += 1
                break
            except Exception as exc:
                self.conn.rollback()
                if not retryable(exc):
                    raise
                if measured:
                    if attempt + 1 < MAX_TRIES:
                        tally.retries += 1
                    else:
                        tally.aborts += 1
                continue
            if measured and name == "new_order":
                tally.new_orders += 1
            break
        else:
            return  # aborted: no latency recorded
        if measured:
            tally.histograms[name].record(int((time.perf_counter() - started) * 1_000_000))

    def attempt(self, body: Any, inputs: tuple) -> None:
        """One try of a transaction, committed."""
        with self.conn.cursor() as cur:
            body(cur, *inputs)
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()


# --- clients over processes, as tpcb's MySQL load -----------------------------------------


class ProcedureCalls:
    """The transactions that are one procedure call with the terminal's inputs, on every
    engine that has the procedures; the subclass's ``_call(name, parameters)`` runs it."""

    def order_status(self, cur: Any, d: int, customer: Any) -> None:
        by_name = isinstance(customer, str)
        fallback = self.customer_id() if by_name else customer
        self._call("order_status", (self.home, d, fallback, customer if by_name else None))

    def delivery(self, cur: Any, carrier: int) -> None:
        self._call("delivery", (self.home, carrier))

    def stock_level(self, cur: Any, d: int, threshold: int) -> None:
        self._call("stock_level", (self.home, d, threshold))


def _client(
    target: Target,
    setup: dict[str, Any],
    index: int,
    barrier: Any,
    reports: list[tuple[Tally, str | None, tuple[float, float]]],
) -> None:
    tally, error, reading = Tally(), None, (0.0, 0.0)
    try:
        # Imported here: the procedures' terminal is a Terminal, from this module.
        from ._tpcc_procedures import open_terminal

        rng = random.Random(f"tpcc-client-{setup['seed']}-{index}")  # noqa: S311 - load
        terminal = open_terminal(target, setup, index % setup["warehouses"] + 1, rng)
        barrier.wait(WORKER_START_TIMEOUT_S)
        meter = ThreadMeter()
        measure_from = time.perf_counter() + setup["warmup"]
        deadline = measure_from + setup["duration"]
        while True:
            now = time.perf_counter()
            if now >= deadline:
                break
            terminal.run_one(terminal.choose(), tally, now >= measure_from)
        reading = meter.stop()
        terminal.close()
    except Exception as exc:  # reported to the parent, which raises
        error = f"{type(exc).__name__}: {exc}"
    reports.append((tally, error, reading))


def _worker(
    target: Target, setup: dict[str, Any], indexes: list[int], barrier: Any, results: Any
) -> None:
    start_as_worker()
    reports: list[tuple[Tally, str | None, tuple[float, float]]] = []
    threads = [
        threading.Thread(target=_client, args=(target, setup, index, barrier, reports))
        for index in indexes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    merged = Tally()
    for tally, _, _ in reports:
        merged.merge(tally)
    errors = [error for _, error, _ in reports if error]
    cpu = process_share(reading for _, _, reading in reports)
    results.put((merged, errors[0] if errors else None, cpu))


def run_load(target: Target, clients: int, setup: dict[str, Any]) -> tuple[Tally, float]:
    """``clients`` terminals over min(clients, CPUs, 8) processes: the merged tally and the
    busiest process's CPU share (%)."""
    processes = max(1, min(clients, os.cpu_count() or 1, 8))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(clients)
    results = context.Queue()
    workers = [
        context.Process(
            target=_worker,
            args=(target, setup, list(range(clients))[i::processes], barrier, results),
            daemon=True,
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    merged, errors, busiest = Tally(), [], 0.0
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S + setup["warmup"] + setup["duration"]
    deadline += 60.0
    try:
        for _ in workers:
            tally, error, cpu = _next_result(results, workers, deadline)
            merged.merge(tally)
            busiest = max(busiest, cpu)
            if error:
                errors.append(error)
        for worker in workers:
            worker.join(10)
    finally:
        stop(workers)
    if errors:
        raise RuntimeError(f"tpcc: {len(errors)} client process(es) failed: {errors[0]}")
    return merged, busiest


def _next_result(results: Any, workers: list[Any], deadline: float) -> Any:
    while True:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            pass
        if any(w.exitcode is not None for w in workers):
            try:
                return results.get(timeout=1.0)
            except queue.Empty:
                pass
            if any(w.exitcode not in (None, 0) for w in workers) or all(
                w.exitcode is not None for w in workers
            ):
                raise RuntimeError("tpcc: client processes exited without reporting")
        if time.monotonic() > deadline:
            raise RuntimeError("tpcc: the client processes did not finish in time")


# --- consistency (clause 3.3.2) -----------------------------------------------------------


def consistency_failures(target: Target) -> list[str]:
    """Conditions 1 to 4, each violation named; empty when all hold."""
    failures: list[str] = []
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id)"
                " FROM warehouse ORDER BY w_id"
            )
            for w, w_ytd, d_ytd in cur.fetchall():
                if w_ytd != d_ytd:
                    failures.append(f"1: warehouse {w}: W_YTD {w_ytd} != sum(D_YTD) {d_ytd}")
            cur.execute(
                "SELECT d_w_id, d_id, d_next_o_id,"
                " (SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id),"
                " (SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),"
                " (SELECT min(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),"
                " (SELECT count(*) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),"
                " (SELECT sum(o_ol_cnt) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id),"
                " (SELECT count(*) FROM order_line WHERE ol_w_id = d_w_id AND ol_d_id = d_id)"
                " FROM district ORDER BY d_w_id, d_id"
            )
            for w, d, next_o, max_o, max_no, min_no, count_no, ol_cnt, lines in cur.fetchall():
                where = f"warehouse {w} district {d}"
                # A district whose new orders were all delivered has no max(NO_O_ID).
                if next_o - 1 != max_o or (max_no is not None and max_no != max_o):
                    failures.append(
                        f"2: {where}: D_NEXT_O_ID - 1 = {next_o - 1}, max(O_ID) = {max_o},"
                        f" max(NO_O_ID) = {max_no}"
                    )
                if max_no is not None and max_no - min_no + 1 != count_no:
                    failures.append(
                        f"3: {where}: max(NO_O_ID) - min(NO_O_ID) + 1 = {max_no - min_no + 1},"
                        f" NEW_ORDER rows = {count_no}"
                    )
                if int(ol_cnt or 0) != int(lines):
                    failures.append(
                        f"4: {where}: sum(O_OL_CNT) = {ol_cnt}, ORDER_LINE rows = {lines}"
                    )
    finally:
        conn.close()
    return failures
