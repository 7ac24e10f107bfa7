"""tpcc's schema and initial population (TPC-C 5.11 clause 4.3.3.1), parallel and seeded.

The nine tables with the specification's columns and primary keys, plus the two secondary
indexes every implementation adds (customer by last name, orders by customer). The ITEM
table is filled by one process, each warehouse's rows by a process of its own (up to the
CPUs); every process draws from ``random.Random`` seeded by (seed, warehouse), so the same
seed and warehouse count build the same rows whatever the number of processes.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import random
from collections.abc import Iterable, Sequence
from typing import Any

from . import _connections as dbc
from ._worker_processes import start_as_worker, stop
from .base import Target

ITEMS = 100_000
DISTRICTS = 10
CUSTOMERS = 3_000  # per district
ORDERS = 3_000  # per district
FIRST_UNDELIVERED = 2_101  # orders from here on are in NEW_ORDER (clause 4.3.3.1)
TABLES = (
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
    "tpcc_constants",
)
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
# Random strings are slices of one seeded pool: drawing every character on its own costs
# Python more than the database spends storing it.
POOL_SIZE = 1 << 16
ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LOAD_TIME = dt.datetime(2026, 1, 1, 12, 0, 0)  # reproducible: the same seed, the same rows

_COLUMNS = {
    "warehouse": "w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20),"
    " w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9),"
    " w_tax decimal(4,4), w_ytd decimal(12,2), PRIMARY KEY (w_id)",
    "district": "d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10),"
    " d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2),"
    " d_zip char(9), d_tax decimal(4,4), d_ytd decimal(12,2), d_next_o_id int,"
    " PRIMARY KEY (d_w_id, d_id)",
    "customer": "c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL,"
    " c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20),"
    " c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9),"
    " c_phone char(16), c_since timestamp NULL, c_credit char(2), c_credit_lim decimal(12,2),"
    " c_discount decimal(4,4), c_balance decimal(12,2), c_ytd_payment decimal(12,2),"
    " c_payment_cnt int, c_delivery_cnt int, c_data varchar(500),"
    " PRIMARY KEY (c_w_id, c_d_id, c_id)",
    "history": "h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int,"
    " h_date timestamp NULL, h_amount decimal(6,2), h_data varchar(24)",
    "new_order": "no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL,"
    " PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
    "orders": "o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int,"
    " o_entry_d timestamp NULL, o_carrier_id int, o_ol_cnt int, o_all_local int,"
    " PRIMARY KEY (o_w_id, o_d_id, o_id)",
    "order_line": "ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL,"
    " ol_number int NOT NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp NULL,"
    " ol_quantity int, ol_amount decimal(6,2), ol_dist_info char(24),"
    " PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    "item": "i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price decimal(5,2),"
    " i_data varchar(50), PRIMARY KEY (i_id)",
    "stock": "s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int, "
    + " ".join(f"s_dist_{d:02d} char(24)," for d in range(1, DISTRICTS + 1))
    + " s_ytd int, s_order_cnt int, s_remote_cnt int, s_data varchar(50),"
    " PRIMARY KEY (s_w_id, s_i_id)",
    # The NURand constants the load used: the run's must differ from them as clause
    # 2.1.6.1 says, also when a later run reuses the data (--no-init).
    "tpcc_constants": "c_last int, c_id int, ol_i_id int, seed int",
}
_INDEXES = (
    "CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
)


def last_name(number: int) -> str:
    """Clause 4.3.2.3: three syllables from the digits of a number 0..999."""
    return "".join(SYLLABLES[int(digit)] for digit in f"{number:03d}")


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """Clause 2.1.6: the non-uniform random number NURand(A, x, y)."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


class Strings:
    """Random a-strings and n-strings of the clause's lengths, cut from a seeded pool."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pool = "".join(rng.choices(ALPHANUMERIC, k=POOL_SIZE + 600))
        self.digits = "".join(rng.choices("0123456789", k=POOL_SIZE + 20))

    def a(self, low: int, high: int) -> str:
        length = self.rng.randint(low, high)
        start = self.rng.randrange(POOL_SIZE)
        return self.pool[start : start + length]

    def n(self, length: int) -> str:
        start = self.rng.randrange(POOL_SIZE)
        return self.digits[start : start + length]

    def zip(self) -> str:
        return self.n(4) + "11111"

    def data(self, low: int, high: int) -> str:
        """i_data / s_data: 10 % hold ORIGINAL at a random position (clause 4.3.3.1)."""
        text = self.a(low, high)
        if self.rng.random() < 0.10:
            at = self.rng.randint(0, len(text) - 8)
            text = text[:at] + "ORIGINAL" + text[at + 8 :]
        return text


def create_statements(engine: str) -> list[str]:
    suffix = " ENGINE=InnoDB" if engine in dbc.MYSQL_FAMILY else ""
    statements = [f"DROP TABLE IF EXISTS {table}" for table in TABLES]
    statements += [f"CREATE TABLE {table} ({_COLUMNS[table]}){suffix}" for table in TABLES]
    return statements


def constants(seed: int) -> tuple[int, int, int]:
    """C for c_last, c_id and ol_i_id at load time (clause 2.1.6)."""
    rng = random.Random(f"tpcc-constants-{seed}")  # noqa: S311 - data, not secrets
    return rng.randint(0, 255), rng.randint(0, 1023), rng.randint(0, 8191)


def run_constants(load: tuple[int, int, int], seed: int) -> tuple[int, int, int]:
    """C for the run: c_last's differs from the load's by 65..119, not 96 nor 112
    (clause 2.1.6.1); c_id's and ol_i_id's are drawn afresh."""
    rng = random.Random(f"tpcc-run-constants-{seed}")  # noqa: S311 - data, not secrets
    while True:
        c_last = rng.randint(0, 255)
        delta = abs(c_last - load[0])
        if 65 <= delta <= 119 and delta not in (96, 112):
            break
    return c_last, rng.randint(0, 1023), rng.randint(0, 8191)


# --- rows ------------------------------------------------------------------------------


def item_rows(seed: int) -> Iterable[tuple]:
    rng = random.Random(f"tpcc-item-{seed}")  # noqa: S311 - data, not secrets
    strings = Strings(rng)
    for i_id in range(1, ITEMS + 1):
        yield (
            i_id,
            rng.randint(1, 10_000),
            strings.a(14, 24),
            round(rng.randint(100, 10_000) / 100, 2),
            strings.data(26, 50),
        )


def warehouse_rows(seed: int, w_id: int) -> dict[str, Iterable[tuple]]:
    """Every row of one warehouse, table by table, as generators (in this order)."""
    rng = random.Random(f"tpcc-warehouse-{seed}-{w_id}")  # noqa: S311 - data, not secrets
    strings = Strings(rng)
    c_last = constants(seed)[0]

    def address() -> tuple:
        return (strings.a(10, 20), strings.a(10, 20), strings.a(10, 20), strings.a(2, 2))

    def warehouse() -> Iterable[tuple]:
        tax = round(rng.randint(0, 2000) / 10_000, 4)
        yield (w_id, strings.a(6, 10), *address(), strings.zip(), tax, 300_000)

    def district() -> Iterable[tuple]:
        for d_id in range(1, DISTRICTS + 1):
            tax = round(rng.randint(0, 2000) / 10_000, 4)
            yield (d_id, w_id, strings.a(6, 10), *address(), strings.zip(), tax, 30_000, 3_001)

    def stock() -> Iterable[tuple]:
        for i_id in range(1, ITEMS + 1):
            dists = [strings.a(24, 24) for _ in range(DISTRICTS)]
            yield (i_id, w_id, rng.randint(10, 100), *dists, 0, 0, 0, strings.data(26, 50))

    def customer() -> Iterable[tuple]:
        for d_id in range(1, DISTRICTS + 1):
            for c_id in range(1, CUSTOMERS + 1):
                number = c_id - 1 if c_id <= 1000 else nurand(rng, 255, 0, 999, c_last)
                credit = "BC" if rng.random() < 0.10 else "GC"
                yield (
                    c_id,
                    d_id,
                    w_id,
                    strings.a(8, 16),
                    "OE",
                    last_name(number),
                    *address(),
                    strings.zip(),
                    strings.n(16),
                    LOAD_TIME,
                    credit,
                    50_000,
                    round(rng.randint(0, 5000) / 10_000, 4),
                    -10,
                    10,
                    1,
                    0,
                    strings.a(300, 500),
                )

    def history() -> Iterable[tuple]:
        for d_id in range(1, DISTRICTS + 1):
            for c_id in range(1, CUSTOMERS + 1):
                yield (c_id, d_id, w_id, d_id, w_id, LOAD_TIME, 10, strings.a(12, 24))

    lines: list[tuple] = []

    def orders() -> Iterable[tuple]:
        for d_id in range(1, DISTRICTS + 1):
            customers = list(range(1, CUSTOMERS + 1))
            rng.shuffle(customers)  # a random permutation of the customers (clause 4.3.3.1)
            for o_id in range(1, ORDERS + 1):
                delivered = o_id < FIRST_UNDELIVERED
                count = rng.randint(5, 15)
                for number in range(1, count + 1):
                    amount = 0 if delivered else round(rng.randint(1, 999_999) / 100, 2)
                    lines.append(
                        (
                            o_id,
                            d_id,
                            w_id,
                            number,
                            rng.randint(1, ITEMS),
                            w_id,
                            LOAD_TIME if delivered else None,
                            5,
                            amount,
                            strings.a(24, 24),
                        )
                    )
                carrier = rng.randint(1, 10) if delivered else None
                yield (o_id, d_id, w_id, customers[o_id - 1], LOAD_TIME, carrier, count, 1)

    def order_line() -> Iterable[tuple]:
        yield from lines  # filled while the orders were written

    def new_order() -> Iterable[tuple]:
        for d_id in range(1, DISTRICTS + 1):
            for o_id in range(FIRST_UNDELIVERED, ORDERS + 1):
                yield (o_id, d_id, w_id)

    return {
        "warehouse": warehouse(),
        "district": district(),
        "stock": stock(),
        "customer": customer(),
        "history": history(),
        "orders": orders(),
        "order_line": order_line(),
        "new_order": new_order(),
    }


# --- writing ---------------------------------------------------------------------------

BATCH = 500


def _write(conn: Any, engine: str, table: str, rows: Iterable[tuple]) -> None:
    if engine == "postgresql":
        with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    if engine == "firebird":
        from .. import firebird_db

        firebird_db.insert_rows(conn, table, rows)
        return
    batch: list[tuple] = []
    with conn.cursor() as cur:
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                _insert(cur, table, batch)
                batch = []
        if batch:
            _insert(cur, table, batch)


def _insert(cur: Any, table: str, batch: Sequence[tuple]) -> None:
    marks = "(" + ", ".join(["%s"] * len(batch[0])) + ")"
    cur.executemany(f"INSERT INTO {table} VALUES {marks}", batch)  # noqa: S608 - our tables


def _load_part(target: Target, seed: int, part: int) -> None:
    """Part 0 is ITEM; part w is warehouse w. One transaction per part."""
    conn = dbc.connect(target, autocommit=False)
    try:
        if part == 0:
            _write(conn, target.engine, "item", item_rows(seed))
        else:
            for table, rows in warehouse_rows(seed, part).items():
                _write(conn, target.engine, table, rows)
        conn.commit()
    finally:
        conn.close()


def _load_worker(target: Target, seed: int, parts: list[int], errors: Any) -> None:
    start_as_worker()
    try:
        for part in parts:
            _load_part(target, seed, part)
    except Exception as exc:  # reported to the parent, which raises
        errors.put(f"{type(exc).__name__}: {exc}")


def initialize(target: Target, warehouses: int, seed: int) -> int:
    """(Re)create and fill the tables; the number of load processes it used."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            for statement in create_statements(target.engine):
                cur.execute(statement)
            cur.execute(
                "INSERT INTO tpcc_constants VALUES (%s, %s, %s, %s)", (*constants(seed), seed)
            )
    finally:
        conn.close()
    parts = list(range(warehouses + 1))
    processes = max(1, min(len(parts), os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    workers = [
        context.Process(target=_load_worker, args=(target, seed, parts[i::processes], errors))
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join()
    finally:
        stop(workers)
    if not errors.empty():
        raise RuntimeError(f"tpcc: loading failed: {errors.get()}")
    if any(worker.exitcode != 0 for worker in workers):
        raise RuntimeError("tpcc: a load process exited without finishing")
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            for statement in _INDEXES:
                cur.execute(statement)
            if target.engine == "postgresql":
                cur.execute("VACUUM ANALYZE")
            elif target.engine == "firebird":
                from .. import firebird_db

                firebird_db.set_statistics(cur)
            else:
                cur.execute("ANALYZE TABLE " + ", ".join(TABLES))
                cur.fetchall()
    finally:
        conn.close()
    return processes


def kept_state(target: Target) -> tuple[int, tuple[int, int, int], int]:
    """Warehouses, load constants and seed of data kept by an earlier run."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM warehouse")
            warehouses = int(cur.fetchone()[0])
            cur.execute("SELECT c_last, c_id, ol_i_id, seed FROM tpcc_constants")
            c_last, c_id, ol_i_id, seed = cur.fetchone()
    finally:
        conn.close()
    return warehouses, (int(c_last), int(c_id), int(ol_i_id)), int(seed)
