"""tpcc's procedures on the real PostgreSQL, MariaDB and Firebird, on a few rows made by hand.

The runs of test_tpcc.py show that the procedures keep the consistency conditions; these
tests check, row by row, what the transactions write: the customer a Payment by last name
picks, a bad-credit customer's data, a New-Order's stock and lines, its rollback on an
unused item, and the Delivery of that order.
"""

from __future__ import annotations

import random
from decimal import Decimal

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _tpcc_load as load
from benchhub_agent.benchmarks import _tpcc_procedures as procedures
from benchhub_agent.benchmarks import tpcc
from benchhub_agent.benchmarks._tpcc_run import UserRollback

W, D = 2, 3  # the home warehouse and the district the orders go to
# Four customers named BARBARBAR in district D: by first name adam, bob, carl, dora, so
# clause 2.5.2.2's ceil(4 / 2) = 2nd is bob (19), with bad credit.
CUSTOMERS = [
    (11, "eve", "BARBAROUGHT", "GC", "data of eve"),
    (4, "dora", "BARBARBAR", "GC", "data of dora"),
    (19, "bob", "BARBARBAR", "BC", "bob's old data"),
    (27, "adam", "BARBARBAR", "GC", "data of adam"),
    (8, "carl", "BARBARBAR", "GC", "data of carl"),
    (5, "finn", "OUGHTABLEPRI", "GC", "data of finn"),
]
ITEMS = [(2, Decimal("12.50")), (3, Decimal("7.25")), (9, Decimal("99.99"))]
STOCK = {2: 50, 3: 15, 9: 33}  # item: quantity in warehouse W


def dist(item: int, district: int) -> str:
    return f"dist {item} of {district}".ljust(24)


@pytest.fixture(params=["postgresql", "mariadb/mysqlclient", "mariadb/pymysql", "firebird"])
def workspace(request):
    engine, _, driver = request.param.partition("/")
    target = getattr(dbs, engine)(f"tpcc_procs_{engine}")
    own = dbc.in_own_schema(target, tpcc.NAME)
    conn = dbc.connect(own)
    try:
        with conn.cursor() as cur:
            for sql in load.create_statements(target.engine):
                cur.execute(sql)
            cur.execute(
                "INSERT INTO warehouse (w_id, w_name, w_tax, w_ytd) VALUES (%s, %s, %s, %s)",
                (W, "north", Decimal("0.0700"), Decimal("300000.00")),
            )
            cur.execute(
                "INSERT INTO district (d_id, d_w_id, d_name, d_tax, d_ytd, d_next_o_id)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (D, W, "east", Decimal("0.0300"), Decimal("30000.00"), 3001),
            )
            for c_id, first, last, credit, data in CUSTOMERS:
                cur.execute(
                    "INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last,"
                    " c_credit, c_discount, c_balance, c_ytd_payment, c_payment_cnt,"
                    " c_delivery_cnt, c_data) VALUES (%s, %s, %s, %s, 'OE', %s, %s, 0.1000,"
                    " -10.00, 10.00, 1, 0, %s)",
                    (c_id, D, W, first, last, credit, data),
                )
            for i_id, price in ITEMS:
                cur.execute(
                    "INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (i_id, i_id * 7, f"item {i_id}", price, "an item"),
                )
                dists = [dist(i_id, d) for d in range(1, load.DISTRICTS + 1)]
                cur.execute(
                    "INSERT INTO stock (s_i_id, s_w_id, s_quantity, "
                    + ", ".join(f"s_dist_{d:02d}" for d in range(1, load.DISTRICTS + 1))
                    + ", s_ytd, s_order_cnt, s_remote_cnt, s_data) VALUES ("
                    + ", ".join(["%s"] * (load.DISTRICTS + 7))
                    + ")",
                    (i_id, W, STOCK[i_id], *dists, 0, 0, 0, "some stock"),
                )
        procedures.install(own)
        yield own, driver or "pymysql"
    finally:
        conn.close()
        dbc.remove_own_objects(target, tpcc.NAME, tpcc.OWN_TABLES)


def terminal(workspace, sabotage=None):
    target, driver = workspace
    rng = random.Random(29)
    args = (target, 2, W, rng, (17, 5, 301), sabotage)
    if target.engine == "firebird":
        return procedures.firebird.FirebirdProcedureTerminal(*args)
    return procedures.ProcedureTerminal(*args, mysql_driver=driver)


def rows(workspace, sql: str, parameters: tuple = ()) -> list[tuple]:
    conn = dbc.connect(workspace[0])
    try:
        with conn.cursor() as cur:
            cur.execute(sql, parameters)
            return [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()


def test_a_payment_by_last_name_pays_for_the_middle_customer_by_first_name(workspace):
    term = terminal(workspace)
    try:
        term.attempt(term.payment, (D, W, D, "BARBARBAR", Decimal("123.45")))
    finally:
        term.close()
    customers = rows(
        workspace,
        "SELECT c_id, c_balance, c_ytd_payment, c_payment_cnt, c_data FROM customer ORDER BY c_id",
    )
    changed = [row for row in customers if row[3] != 1]
    assert changed == [
        (
            19,
            Decimal("-133.45"),
            Decimal("133.45"),
            2,
            f"19 {D} {W} {D} {W} 123.45 | bob's old data",
        )
    ]
    assert rows(workspace, "SELECT w_ytd FROM warehouse") == [(Decimal("300123.45"),)]
    assert rows(workspace, "SELECT d_ytd FROM district") == [(Decimal("30123.45"),)]
    assert rows(workspace, "SELECT h_c_id, h_d_id, h_amount, h_data FROM history") == [
        (19, D, Decimal("123.45"), "north    east")
    ]


def test_a_new_order_with_an_unused_item_is_rolled_back_whole(workspace):
    term = terminal(workspace)
    try:
        with pytest.raises(UserRollback):
            term.attempt(term.new_order, (D, 4, [(2, W, 4), (3, W, 7), (load.ITEMS + 1, W, 1)]))
        term.conn.rollback()
    finally:
        term.close()
    assert rows(workspace, "SELECT d_next_o_id FROM district") == [(3001,)]
    assert rows(workspace, "SELECT count(*) FROM orders") == [(0,)]
    assert rows(workspace, "SELECT s_i_id, s_quantity FROM stock ORDER BY s_i_id") == [
        (2, 50),
        (3, 15),
        (9, 33),
    ]


def test_a_new_order_takes_its_stock_and_a_delivery_bills_its_customer(workspace):
    term = terminal(workspace)
    try:
        term.attempt(term.new_order, (D, 4, [(3, W, 9), (2, W, 4)]))
        term.attempt(term.order_status, (D, 4))
        term.attempt(term.stock_level, (D, 40))
        assert rows(workspace, "SELECT o_id, o_c_id, o_carrier_id, o_ol_cnt FROM orders") == [
            (3001, 4, None, 2)
        ]
        assert rows(workspace, "SELECT no_o_id FROM new_order") == [(3001,)]
        term.attempt(term.delivery, (6,))
    finally:
        term.close()
    assert rows(workspace, "SELECT d_next_o_id FROM district") == [(3002,)]
    # 15 - 9 falls below 10: 91 more (clause 2.4.2.2).
    assert rows(
        workspace, "SELECT s_i_id, s_quantity, s_ytd, s_order_cnt FROM stock ORDER BY s_i_id"
    ) == [(2, 46, 4, 1), (3, 97, 9, 1), (9, 33, 0, 0)]
    lines = rows(
        workspace,
        "SELECT ol_number, ol_i_id, ol_quantity, ol_amount, ol_dist_info,"
        " ol_delivery_d IS NOT NULL FROM order_line ORDER BY ol_number",
    )
    assert [line[:4] for line in lines] == [
        (1, 3, 9, Decimal("65.25")),
        (2, 2, 4, Decimal("50.00")),
    ]
    assert [line[4].rstrip() for line in lines] == ["dist 3 of 3", "dist 2 of 3"]
    assert all(line[5] for line in lines)
    assert rows(workspace, "SELECT o_carrier_id FROM orders") == [(6,)]
    assert rows(workspace, "SELECT count(*) FROM new_order") == [(0,)]
    assert rows(workspace, "SELECT c_balance, c_delivery_cnt FROM customer WHERE c_id = 4") == [
        (Decimal("105.25"), 1)
    ]


def test_the_sabotages_reach_the_procedures(workspace):
    for sabotage in ("new_order_skips_an_id", "new_order_miscounts_lines"):
        term = terminal(workspace, sabotage)
        try:
            term.attempt(term.new_order, (D, 4, [(9, W, 2), (3, W, 1), (2, W, 5)]))
        finally:
            term.close()
    term = terminal(workspace, "payment_skips_district")
    try:
        term.attempt(term.payment, (D, W, D, 27, Decimal("0.42")))
    finally:
        term.close()
    # The first order took two ids, the second one line more than it has.
    assert rows(workspace, "SELECT d_next_o_id, d_ytd FROM district") == [
        (3004, Decimal("30000.00"))
    ]
    assert rows(workspace, "SELECT o_id, o_ol_cnt FROM orders ORDER BY o_id") == [
        (3001, 3),
        (3003, 4),
    ]
    assert rows(workspace, "SELECT w_ytd FROM warehouse") == [(Decimal("300000.42"),)]


def test_a_new_load_replaces_the_tables_the_firebird_procedures_use():
    target = dbs.firebird("tpcc_procs_reload")
    own = dbc.in_own_schema(target, tpcc.NAME)
    try:
        conn = dbc.connect(own)
        try:
            with conn.cursor() as cur:
                for sql in load.create_statements(own.engine):
                    cur.execute(sql)
            procedures.install(own)
            procedures.firebird.uninstall(own)  # what tpcc does before a load
            with conn.cursor() as cur:
                for sql in load.create_statements(own.engine):
                    cur.execute(sql)
        finally:
            conn.close()
        procedures.install(own)
        assert rows(
            (own, None),
            "SELECT count(*) FROM rdb$procedures WHERE rdb$procedure_name STARTING WITH 'TPCC_'",
        ) == [(5,)]
    finally:
        dbc.remove_own_objects(target, tpcc.NAME, tpcc.OWN_TABLES)
