"""tpcc's five transactions as server-side procedures on PostgreSQL and MySQL/MariaDB.

A terminal that sends each of TPC-C's statements on its own spends more CPU in the
driver than the server spends running them (about 28 statements a transaction, each
with its parameters escaped and its answer parsed in Python): the load would measure
the client. As HammerDB's TPROC-C does, each transaction is one call of a procedure
kept in the benchmark's own schema or database (PL/pgSQL functions; MariaDB/MySQL
stored procedures), with the inputs the terminal drew: the same statements, in the
same order, on the same rows as the terminal's own (:class:`._tpcc_run.Terminal`);
Firebird's PSQL procedures are in :mod:`._tpcc_procedures_firebird`. The sabotages of
the tests are arguments, so that the code a test breaks is the code every run runs.

Each call is one round trip and a transaction of its own: on PostgreSQL a function called
alone in autocommit, on MySQL/MariaDB a procedure that starts and commits its transaction
(rolled back by a handler on any error, which then reaches the terminal, as HammerDB's).
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

from .. import db
from . import _connections as dbc
from . import _tpcc_procedures_firebird as firebird
from ._tpcc_load import DISTRICTS
from ._tpcc_run import ProcedureCalls, Terminal, UserRollback
from .base import Target

ENGINES = frozenset({"postgresql", *dbc.MYSQL_FAMILY})
# The SQLSTATE a New-Order's unused item raises (clause 2.4.2.3): rolled back on purpose.
PG_UNUSED_ITEM = "BH001"
MYSQL_SIGNAL = 1644  # ER_SIGNAL_EXCEPTION: what SIGNAL SQLSTATE '45000' raises
UNUSED_ITEM_MESSAGE = "tpcc: unused item"

_DIST = " ".join(f"WHEN {d} THEN s_dist_{d:02d}" for d in range(1, DISTRICTS + 1))

_PG_FUNCTIONS = (
    """
CREATE OR REPLACE FUNCTION tpcc_customer_by_name(p_w int, p_d int, p_last varchar)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_ids int[];
BEGIN
    -- the one at position ceil(n / 2) when sorted by first name (clause 2.5.2.2)
    SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM customer
     WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
    RETURN v_ids[(cardinality(v_ids) + 1) / 2];
END $$""",
    f"""
CREATE OR REPLACE FUNCTION tpcc_new_order(p_w int, p_d int, p_c int, p_items int[],
    p_supplies int[], p_quantities int[], p_all_local int, p_step int, p_extra_lines int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_o int; v_w record; v_dt record; v_c record; v_i record; v_s record;
    v_count int := cardinality(p_items); v_left int;
BEGIN
    SELECT w_tax INTO v_w FROM warehouse WHERE w_id = p_w;
    SELECT d_tax, d_next_o_id INTO v_dt FROM district
     WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
    v_o := v_dt.d_next_o_id;
    UPDATE district SET d_next_o_id = d_next_o_id + p_step WHERE d_w_id = p_w AND d_id = p_d;
    SELECT c_discount, c_last, c_credit INTO v_c FROM customer
     WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
        o_all_local)
    VALUES (v_o, p_d, p_w, p_c, LOCALTIMESTAMP, NULL, v_count + p_extra_lines, p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
    FOR n IN 1 .. v_count LOOP
        SELECT i_price, i_name, i_data INTO v_i FROM item WHERE i_id = p_items[n];
        IF NOT FOUND THEN
            RAISE EXCEPTION '{UNUSED_ITEM_MESSAGE} %', p_items[n]
                USING ERRCODE = '{PG_UNUSED_ITEM}';
        END IF;
        SELECT s_quantity, s_data, CASE p_d {_DIST} END AS dist INTO v_s FROM stock
         WHERE s_w_id = p_supplies[n] AND s_i_id = p_items[n] FOR UPDATE;
        v_left := v_s.s_quantity - p_quantities[n];
        IF v_left < 10 THEN
            v_left := v_left + 91;
        END IF;
        UPDATE stock SET s_quantity = v_left, s_ytd = s_ytd + p_quantities[n],
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN p_supplies[n] = p_w THEN 0 ELSE 1 END
         WHERE s_w_id = p_supplies[n] AND s_i_id = p_items[n];
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
        VALUES (v_o, p_d, p_w, n, p_items[n], p_supplies[n], NULL, p_quantities[n],
            p_quantities[n] * v_i.i_price, v_s.dist);
    END LOOP;
    RETURN v_o;
END $$""",  # noqa: S608 - our own constants
    """
CREATE OR REPLACE FUNCTION tpcc_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c int,
    p_last varchar, p_amount numeric, p_skip_district boolean)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_w record; v_dt record; v_cu record; v_c int := p_c;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
    SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip INTO v_w FROM warehouse
     WHERE w_id = p_w;
    IF NOT p_skip_district THEN
        UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
    END IF;
    SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip INTO v_dt FROM district
     WHERE d_w_id = p_w AND d_id = p_d;
    IF p_last IS NOT NULL THEN  -- a name no customer has: the one by id instead
        v_c := coalesce(tpcc_customer_by_name(p_c_w, p_c_d, p_last), p_c);
    END IF;
    SELECT c_first, c_middle, c_last, c_balance, c_credit, c_data INTO v_cu FROM customer
     WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF v_cu.c_credit = 'BC' THEN
        UPDATE customer SET c_balance = c_balance - p_amount,
            c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1,
            c_data = left(format('%s %s %s %s %s %s | %s', v_c, p_c_d, p_c_w, p_d, p_w,
                p_amount, v_cu.c_data), 500)
         WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_amount,
            c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1
         WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, LOCALTIMESTAMP, p_amount,
        left(v_w.w_name || '    ' || v_dt.d_name, 24));
    RETURN v_c;
END $$""",
    """
CREATE OR REPLACE FUNCTION tpcc_order_status(p_w int, p_d int, p_c int, p_last varchar)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_c int := p_c; v_cu record; v_o record; v_line record; v_lines int := 0;
BEGIN
    IF p_last IS NOT NULL THEN
        v_c := coalesce(tpcc_customer_by_name(p_w, p_d, p_last), p_c);
    END IF;
    SELECT c_balance, c_first, c_middle, c_last INTO v_cu FROM customer
     WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    SELECT o_id, o_entry_d, o_carrier_id INTO v_o FROM orders
     WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
    IF FOUND THEN
        FOR v_line IN SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
                        FROM order_line
                       WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o.o_id LOOP
            v_lines := v_lines + 1;
        END LOOP;
    END IF;
    RETURN v_lines;
END $$""",
    f"""
CREATE OR REPLACE FUNCTION tpcc_delivery(p_w int, p_carrier int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_o int; v_c int; v_total numeric; v_rows int; v_done int := 0;
BEGIN
    FOR v_d IN 1 .. {DISTRICTS} LOOP
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
         ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        CONTINUE WHEN NOT FOUND;  -- no undelivered order here (clause 2.7.4.2)
        DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        CONTINUE WHEN v_rows = 0;  -- delivered by another terminal meanwhile
        SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
        UPDATE orders SET o_carrier_id = p_carrier
         WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
        UPDATE order_line SET ol_delivery_d = LOCALTIMESTAMP
         WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
        SELECT sum(ol_amount) INTO v_total FROM order_line
         WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
        UPDATE customer SET c_balance = c_balance + coalesce(v_total, 0),
            c_delivery_cnt = c_delivery_cnt + 1
         WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
        v_done := v_done + 1;
    END LOOP;
    RETURN v_done;
END $$""",  # noqa: S608 - our own constants
    """
CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w int, p_d int, p_threshold int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_next int; v_low int;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line JOIN stock
        ON s_w_id = ol_w_id AND s_i_id = ol_i_id
     WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id >= v_next - 20 AND ol_o_id < v_next
       AND s_quantity < p_threshold;
    RETURN v_low;
END $$""",
)

# The customer by last name (clause 2.5.2.2), for MySQL's procedures: no arrays there, so
# the count, then the one at position ceil(n / 2) by first name; v_c keeps the id given
# when no customer has the name.
_MYSQL_BY_NAME = """
    IF p_last IS NOT NULL THEN
        SELECT count(*) INTO v_n FROM customer
         WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last;
        IF v_n > 0 THEN
            SET v_n = (v_n + 1) DIV 2 - 1;
            SELECT c_id INTO v_c FROM customer
             WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last
             ORDER BY c_first LIMIT v_n, 1;
        END IF;
    END IF;"""
# Each procedure is a transaction of its own on an autocommit connection: committed at
# its end, rolled back on any error before the error goes on to the terminal (which
# retries a deadlock or a lock wait timeout as on PostgreSQL).
_START = """
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;"""
_BY_NAME_PAYMENT = _MYSQL_BY_NAME.format(w="p_c_w", d="p_c_d")
_BY_NAME_ORDER_STATUS = _MYSQL_BY_NAME.format(w="p_w", d="p_d")

_MYSQL_PROCEDURES = (
    f"""
CREATE PROCEDURE tpcc_new_order(p_w INT, p_d INT, p_c INT, p_lines TEXT, p_all_local INT,
    p_step INT, p_extra_lines INT)
BEGIN
    DECLARE v_o, v_count, v_n, v_item, v_supply, v_quantity, v_stock, v_left INT;
    DECLARE v_w_tax, v_d_tax, v_discount DECIMAL(4,4);
    DECLARE v_last VARCHAR(16);
    DECLARE v_credit CHAR(2);
    DECLARE v_price DECIMAL(5,2);
    DECLARE v_name VARCHAR(24);
    DECLARE v_i_data, v_s_data VARCHAR(50);
    DECLARE v_dist CHAR(24);
    DECLARE v_missing INT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_missing = 1;{_START}
    SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
    SELECT d_tax, d_next_o_id INTO v_d_tax, v_o FROM district
     WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
    UPDATE district SET d_next_o_id = d_next_o_id + p_step WHERE d_w_id = p_w AND d_id = p_d;
    SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit FROM customer
     WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
    SET v_count = JSON_LENGTH(p_lines);
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
        o_all_local)
    VALUES (v_o, p_d, p_w, p_c, NOW(), NULL, v_count + p_extra_lines, p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
    SET v_n = 0;
    WHILE v_n < v_count DO
        SET v_item = JSON_EXTRACT(p_lines, CONCAT('$[', v_n, '][0]'));
        SET v_supply = JSON_EXTRACT(p_lines, CONCAT('$[', v_n, '][1]'));
        SET v_quantity = JSON_EXTRACT(p_lines, CONCAT('$[', v_n, '][2]'));
        SET v_missing = 0;
        SELECT i_price, i_name, i_data INTO v_price, v_name, v_i_data FROM item
         WHERE i_id = v_item;
        IF v_missing THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{UNUSED_ITEM_MESSAGE}';
        END IF;
        SELECT s_quantity, s_data, CASE p_d {_DIST} END INTO v_stock, v_s_data, v_dist
          FROM stock WHERE s_w_id = v_supply AND s_i_id = v_item FOR UPDATE;
        SET v_left = v_stock - v_quantity;
        IF v_left < 10 THEN
            SET v_left = v_left + 91;
        END IF;
        UPDATE stock SET s_quantity = v_left, s_ytd = s_ytd + v_quantity,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + IF(v_supply = p_w, 0, 1)
         WHERE s_w_id = v_supply AND s_i_id = v_item;
        SET v_n = v_n + 1;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
        VALUES (v_o, p_d, p_w, v_n, v_item, v_supply, NULL, v_quantity,
            v_quantity * v_price, v_dist);
    END WHILE;
    COMMIT;
END""",  # noqa: S608 - our own constants
    f"""
CREATE PROCEDURE tpcc_payment(p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c INT,
    p_last VARCHAR(16), p_amount DECIMAL(6,2), p_skip_district INT)
BEGIN
    DECLARE v_c INT DEFAULT p_c;
    DECLARE v_n INT;
    DECLARE v_w_name, v_d_name VARCHAR(10);
    DECLARE v_w_street_1, v_w_street_2, v_w_city, v_d_street_1, v_d_street_2, v_d_city,
        v_c_first VARCHAR(20);
    DECLARE v_w_state, v_d_state, v_c_middle, v_credit CHAR(2);
    DECLARE v_w_zip, v_d_zip CHAR(9);
    DECLARE v_c_last VARCHAR(16);
    DECLARE v_balance DECIMAL(12,2);
    DECLARE v_c_data VARCHAR(500);{_START}
    UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
    SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip
      INTO v_w_name, v_w_street_1, v_w_street_2, v_w_city, v_w_state, v_w_zip
      FROM warehouse WHERE w_id = p_w;
    IF NOT p_skip_district THEN
        UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
    END IF;
    SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip
      INTO v_d_name, v_d_street_1, v_d_street_2, v_d_city, v_d_state, v_d_zip
      FROM district WHERE d_w_id = p_w AND d_id = p_d;{_BY_NAME_PAYMENT}
    SELECT c_first, c_middle, c_last, c_balance, c_credit, c_data
      INTO v_c_first, v_c_middle, v_c_last, v_balance, v_credit, v_c_data
      FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF v_credit = 'BC' THEN
        UPDATE customer SET c_balance = c_balance - p_amount,
            c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1,
            c_data = LEFT(CONCAT_WS(' ', v_c, p_c_d, p_c_w, p_d, p_w, p_amount, '|',
                v_c_data), 500)
         WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_amount,
            c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1
         WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c, p_c_d, p_c_w, p_d, p_w, NOW(), p_amount,
        LEFT(CONCAT(v_w_name, '    ', v_d_name), 24));
    COMMIT;
END""",  # noqa: S608 - our own constants
    f"""
CREATE PROCEDURE tpcc_order_status(p_w INT, p_d INT, p_c INT, p_last VARCHAR(16))
BEGIN
    DECLARE v_c INT DEFAULT p_c;
    DECLARE v_n, v_o, v_carrier, v_item, v_supply, v_quantity INT;
    DECLARE v_balance DECIMAL(12,2);
    DECLARE v_amount DECIMAL(6,2);
    DECLARE v_first VARCHAR(16);
    DECLARE v_middle CHAR(2);
    DECLARE v_last VARCHAR(16);
    DECLARE v_entry, v_delivered DATETIME;
    DECLARE v_done INT DEFAULT 0;
    DECLARE v_lines CURSOR FOR
        SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
         WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;{_START}{_BY_NAME_ORDER_STATUS}
    SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
      FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier FROM orders
     WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
    IF v_o IS NOT NULL THEN
        SET v_done = 0;
        OPEN v_lines;
        reading: LOOP
            FETCH v_lines INTO v_item, v_supply, v_quantity, v_amount, v_delivered;
            IF v_done THEN
                LEAVE reading;
            END IF;
        END LOOP;
        CLOSE v_lines;
    END IF;
    COMMIT;
END""",  # noqa: S608 - our own constants
    f"""
CREATE PROCEDURE tpcc_delivery(p_w INT, p_carrier INT)
BEGIN
    DECLARE v_d INT DEFAULT 1;
    DECLARE v_o, v_c INT;
    DECLARE v_total DECIMAL(12,2);
    DECLARE v_missing INT DEFAULT 0;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_missing = 1;{_START}
    WHILE v_d <= {DISTRICTS} DO
        SET v_missing = 0;
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
         ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF NOT v_missing THEN
            DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
            IF ROW_COUNT() > 0 THEN
                SELECT o_c_id INTO v_c FROM orders
                 WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
                UPDATE orders SET o_carrier_id = p_carrier
                 WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
                UPDATE order_line SET ol_delivery_d = NOW()
                 WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                SELECT sum(ol_amount) INTO v_total FROM order_line
                 WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                UPDATE customer SET c_balance = c_balance + COALESCE(v_total, 0),
                    c_delivery_cnt = c_delivery_cnt + 1
                 WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
            END IF;
        END IF;
        SET v_d = v_d + 1;
    END WHILE;
    COMMIT;
END""",  # noqa: S608 - our own constants
    f"""
CREATE PROCEDURE tpcc_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
    DECLARE v_next, v_low INT;{_START}
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line JOIN stock
        ON s_w_id = ol_w_id AND s_i_id = ol_i_id
     WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id >= v_next - 20 AND ol_o_id < v_next
       AND s_quantity < p_threshold;
    COMMIT;
END""",  # noqa: S608 - our own constants
)

PROCEDURES = ("new_order", "payment", "order_status", "delivery", "stock_level")
# How each transaction is called: PostgreSQL's statements are prepared once per terminal.
PG_CALLS = {
    "new_order": "SELECT tpcc_new_order($1, $2, $3, $4::int[], $5::int[], $6::int[], $7, $8, $9)",
    "payment": "SELECT tpcc_payment($1, $2, $3, $4, $5, $6, $7, $8)",
    "order_status": "SELECT tpcc_order_status($1, $2, $3, $4)",
    "delivery": "SELECT tpcc_delivery($1, $2)",
    "stock_level": "SELECT tpcc_stock_level($1, $2, $3)",
}
MYSQL_ARGUMENTS = {
    "new_order": 7,
    "payment": 8,
    "order_status": 4,
    "delivery": 2,
    "stock_level": 3,
}


def install(target: Target) -> None:
    """Create (or replace) the procedures in the benchmark's own schema or database, on
    every run: data kept by an older agent gets this agent's transactions."""
    if target.engine == "firebird":
        firebird.install(target)
    if target.engine not in ENGINES:
        return
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                for sql in _PG_FUNCTIONS:
                    cur.execute(sql)
            else:
                for name, sql in zip(PROCEDURES, _MYSQL_PROCEDURES, strict=True):
                    cur.execute(f"DROP PROCEDURE IF EXISTS tpcc_{name}")
                    cur.execute(sql)
    finally:
        conn.close()


def note(engine: str) -> str:
    if engine in ENGINES or engine == "firebird":
        kind = {"postgresql": "PL/pgSQL function", "firebird": "PSQL procedure"}.get(
            engine, "stored procedure"
        )
        return (
            f"transactions: one call of a {kind} each, with the inputs the terminal drew "
            "(as HammerDB's TPROC-C)."
        )
    return "transactions: each statement sent by the terminal, prepared once per connection."


class ProcedureTerminal(ProcedureCalls, Terminal):
    """A terminal whose transactions are one procedure call each."""

    def __init__(self, target: Target, *args: Any, mysql_driver: str = "pymysql", **kwargs: Any):
        self.postgresql = target.engine == "postgresql"
        self.mysqlclient = not self.postgresql and mysql_driver == "mysqlclient"
        super().__init__(target, *args, **kwargs)
        if self.postgresql:
            self._prepare_postgresql()
        elif self.mysqlclient:
            self.literal = self.conn.literal
            self.calls = {
                name: f"CALL tpcc_{name}({', '.join(['%s'] * count)})".encode()
                for name, count in MYSQL_ARGUMENTS.items()
            }
        else:
            self.cur = self.conn.cursor()
            self.calls = {
                name: f"CALL tpcc_{name}({', '.join(['%s'] * count)})"
                for name, count in MYSQL_ARGUMENTS.items()
            }

    def connect(self, target: Target) -> Any:
        if self.mysqlclient:
            # MariaDB's C client library, as tpcb's and select-update's loads: the round trip
            # in C with the GIL released, where PyMySQL's costs about 100 µs of Python.
            import MySQLdb

            return MySQLdb.connect(**db.mysql_connect_args(target), autocommit=True)
        # Each call is a transaction of its own, one round trip: a PostgreSQL function
        # called alone, a MySQL procedure that commits.
        return dbc.connect(target, autocommit=True)

    def _prepare_postgresql(self) -> None:
        # Straight through libpq, as select-update's and tpcb's PostgreSQL clients: a
        # psycopg cursor's execute costs about 80 µs more CPU a call than the call itself
        # while it waits for a transaction of a few milliseconds.
        from psycopg import pq

        self.pq, self.pgconn = pq, self.conn.pgconn
        self.tuples_ok = int(pq.ExecStatus.TUPLES_OK)
        for name, sql in PG_CALLS.items():
            result = self.pgconn.prepare(name.encode(), sql.encode())
            if result.status != pq.ExecStatus.COMMAND_OK:
                raise RuntimeError(result.get_error_message())
        self.names = {name: name.encode() for name in PG_CALLS}

    def _call(self, name: str, parameters: tuple) -> None:
        if self.postgresql:
            self._call_postgresql(name, parameters)
            return
        try:
            if self.mysqlclient:
                self.conn.query(self.calls[name] % tuple(map(self.literal, parameters)))
                self.conn.next_result()  # a CALL's own status, read to the end
            else:
                self.cur.execute(self.calls[name], parameters)
        except Exception as exc:
            if _unused_item(exc):
                raise UserRollback from exc
            raise

    def _call_postgresql(self, name: str, parameters: tuple) -> None:
        result = self.pgconn.exec_prepared(self.names[name], [_pg_text(p) for p in parameters])
        if result.status == self.tuples_ok:
            return
        if self.pgconn.status != self.pq.ConnStatus.OK:
            raise ConnectionError(result.get_error_message())
        state = (result.error_field(self.pq.DiagnosticField.SQLSTATE) or b"").decode()
        if state == PG_UNUSED_ITEM:
            raise UserRollback
        raise CallFailed(result.get_error_message(), state)

    def attempt(self, body: Any, inputs: tuple) -> None:
        body(None, *inputs)  # committed by the call itself

    def new_order(self, cur: Any, d: int, c: int, lines: list[tuple[int, int, int]]) -> None:
        w = self.home
        all_local = int(all(supply == w for _, supply, _ in lines))
        step = 2 if self.sabotage == "new_order_skips_an_id" else 1
        extra = int(self.sabotage == "new_order_miscounts_lines")
        if self.postgresql:
            items = [item for item, _, _ in lines]
            supplies = [supply for _, supply, _ in lines]
            quantities = [quantity for _, _, quantity in lines]
            self._call("new_order", (w, d, c, items, supplies, quantities, all_local, step, extra))
        else:
            encoded = "[" + ",".join(f"[{i},{s},{q}]" for i, s, q in lines) + "]"
            self._call("new_order", (w, d, c, encoded, all_local, step, extra))

    def payment(self, cur: Any, d: int, c_w: int, c_d: int, customer: Any, amount: Decimal) -> None:
        by_name = isinstance(customer, str)
        fallback = self.customer_id() if by_name else customer
        skip = self.sabotage == "payment_skips_district"
        self._call(
            "payment",
            (self.home, d, c_w, c_d, fallback, customer if by_name else None, amount,
             skip if self.postgresql else int(skip)),
        )  # fmt: skip

    def close(self) -> None:
        if not self.postgresql and not self.mysqlclient:
            self.cur.close()
        super().close()


class CallFailed(Exception):
    """A PostgreSQL call failed; ``sqlstate`` tells the terminal whether to retry it."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _pg_text(value: Any) -> bytes | None:
    """A parameter in PostgreSQL's text format."""
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, list):
        return ("{" + ",".join(map(str, value)) + "}").encode()
    return str(value).encode()


def open_terminal(target: Target, setup: dict[str, Any], home: int, rng: random.Random) -> Terminal:
    """The terminal a run's client drives: procedure calls where the engine has them."""
    args = (target, setup["warehouses"], home, rng, setup["constants"], setup["sabotage"])
    if target.engine == "firebird":
        return firebird.FirebirdProcedureTerminal(*args)
    if target.engine not in ENGINES:
        return Terminal(*args)
    return ProcedureTerminal(*args, mysql_driver=setup.get("mysql_driver", "pymysql"))


def _unused_item(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) == PG_UNUSED_ITEM:
        return True
    args = getattr(exc, "args", ())
    return len(args) >= 2 and args[0] == MYSQL_SIGNAL and UNUSED_ITEM_MESSAGE in str(args[1])
