"""tpcc's five transactions as PSQL stored procedures on Firebird.

The same statements, in the same order, on the same rows as the PL/pgSQL functions and
MySQL procedures of :mod:`._tpcc_procedures` (and the terminal's own,
:class:`._tpcc_run.Terminal`): one ``EXECUTE PROCEDURE`` per transaction, prepared once
per terminal, with the inputs the terminal drew and the tests' sabotages as arguments.

A Firebird procedure cannot commit: each call runs in a transaction the terminal starts
before it and commits after it, through the client library's ISC API
(:mod:`..firebird_isc`). PSQL has no arrays, so a New-Order's lines travel as one
string of fixed-width numbers (:func:`encode_lines`), cut apart by SUBSTRING.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .. import firebird_db, firebird_isc
from ._tpcc_load import DISTRICTS
from ._tpcc_run import ProcedureCalls, Terminal, UserRollback
from .base import Target

PROCEDURES = ("new_order", "payment", "order_status", "delivery", "stock_level")
UNUSED_ITEM = "TPCC_UNUSED_ITEM"  # the exception a New-Order's unused item raises
# A New-Order line in the string the procedure takes: item, supplying warehouse, quantity.
ITEM_DIGITS, SUPPLY_DIGITS, QUANTITY_DIGITS = 6, 6, 2
LINE_WIDTH = ITEM_DIGITS + SUPPLY_DIGITS + QUANTITY_DIGITS
MAX_LINES = 15  # clause 2.4.1.3: 5 to 15

_DIST = " ".join(f"WHEN {d} THEN s_dist_{d:02d}" for d in range(1, DISTRICTS + 1))

# The customer by last name (clause 2.5.2.2): the count, then the one at position
# ceil(n / 2) by first name; v_c keeps the id given when no customer has the name.
_BY_NAME = """
    IF (p_last IS NOT NULL) THEN
    BEGIN
        SELECT count(*) FROM customer
         WHERE c_w_id = :{w} AND c_d_id = :{d} AND c_last = :p_last INTO :v_n;
        IF (v_n > 0) THEN
        BEGIN
            v_n = (v_n + 1) / 2;
            SELECT c_id FROM customer
             WHERE c_w_id = :{w} AND c_d_id = :{d} AND c_last = :p_last
             ORDER BY c_first ROWS :v_n TO :v_n INTO :v_c;
        END
    END"""

_EXCEPTION = f"CREATE OR ALTER EXCEPTION {UNUSED_ITEM} 'tpcc: unused item'"

_SOURCES = {
    "new_order": f"""
CREATE OR ALTER PROCEDURE tpcc_new_order (p_w INT, p_d INT, p_c INT,
    p_lines VARCHAR({LINE_WIDTH * MAX_LINES}), p_all_local INT, p_step INT, p_extra_lines INT)
AS
    DECLARE v_o INT; DECLARE v_count INT; DECLARE v_n INT; DECLARE v_at INT;
    DECLARE v_item INT; DECLARE v_supply INT; DECLARE v_quantity INT;
    DECLARE v_stock INT; DECLARE v_left INT;
    DECLARE v_w_tax DECIMAL(4,4); DECLARE v_d_tax DECIMAL(4,4); DECLARE v_discount DECIMAL(4,4);
    DECLARE v_last VARCHAR(16); DECLARE v_credit CHAR(2);
    DECLARE v_price DECIMAL(5,2); DECLARE v_name VARCHAR(24);
    DECLARE v_i_data VARCHAR(50); DECLARE v_s_data VARCHAR(50); DECLARE v_dist CHAR(24);
BEGIN
    SELECT w_tax FROM warehouse WHERE w_id = :p_w INTO :v_w_tax;
    SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = :p_w AND d_id = :p_d
       FOR UPDATE WITH LOCK INTO :v_d_tax, :v_o;
    UPDATE district SET d_next_o_id = d_next_o_id + :p_step
     WHERE d_w_id = :p_w AND d_id = :p_d;
    SELECT c_discount, c_last, c_credit FROM customer
     WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_id = :p_c INTO :v_discount, :v_last, :v_credit;
    v_count = CHAR_LENGTH(p_lines) / {LINE_WIDTH};
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
        o_all_local)
    VALUES (:v_o, :p_d, :p_w, :p_c, LOCALTIMESTAMP, NULL, :v_count + :p_extra_lines,
        :p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (:v_o, :p_d, :p_w);
    v_n = 1;
    WHILE (v_n <= v_count) DO
    BEGIN
        v_at = (v_n - 1) * {LINE_WIDTH} + 1;
        v_item = CAST(SUBSTRING(p_lines FROM v_at FOR {ITEM_DIGITS}) AS INT);
        v_supply = CAST(SUBSTRING(p_lines FROM v_at + {ITEM_DIGITS} FOR {SUPPLY_DIGITS}) AS INT);
        v_quantity = CAST(SUBSTRING(p_lines FROM v_at + {ITEM_DIGITS + SUPPLY_DIGITS}
            FOR {QUANTITY_DIGITS}) AS INT);
        v_price = NULL;
        SELECT i_price, i_name, i_data FROM item WHERE i_id = :v_item
          INTO :v_price, :v_name, :v_i_data;
        IF (ROW_COUNT = 0) THEN
            EXCEPTION {UNUSED_ITEM};
        SELECT s_quantity, s_data, CASE :p_d {_DIST} END FROM stock
         WHERE s_w_id = :v_supply AND s_i_id = :v_item
           FOR UPDATE WITH LOCK INTO :v_stock, :v_s_data, :v_dist;
        v_left = v_stock - v_quantity;
        IF (v_left < 10) THEN
            v_left = v_left + 91;
        UPDATE stock SET s_quantity = :v_left, s_ytd = s_ytd + :v_quantity,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + IIF(:v_supply = :p_w, 0, 1)
         WHERE s_w_id = :v_supply AND s_i_id = :v_item;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
        VALUES (:v_o, :p_d, :p_w, :v_n, :v_item, :v_supply, NULL, :v_quantity,
            :v_quantity * :v_price, :v_dist);
        v_n = v_n + 1;
    END
END""",  # noqa: S608 - our own constants
    "payment": f"""
CREATE OR ALTER PROCEDURE tpcc_payment (p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c INT,
    p_last VARCHAR(16), p_amount DECIMAL(6,2), p_skip_district INT)
AS
    DECLARE v_c INT; DECLARE v_n INT;
    DECLARE v_w_name VARCHAR(10); DECLARE v_d_name VARCHAR(10);
    DECLARE v_w_street_1 VARCHAR(20); DECLARE v_w_street_2 VARCHAR(20);
    DECLARE v_w_city VARCHAR(20); DECLARE v_w_state CHAR(2); DECLARE v_w_zip CHAR(9);
    DECLARE v_d_street_1 VARCHAR(20); DECLARE v_d_street_2 VARCHAR(20);
    DECLARE v_d_city VARCHAR(20); DECLARE v_d_state CHAR(2); DECLARE v_d_zip CHAR(9);
    DECLARE v_first VARCHAR(16); DECLARE v_middle CHAR(2); DECLARE v_last VARCHAR(16);
    DECLARE v_balance DECIMAL(12,2); DECLARE v_credit CHAR(2); DECLARE v_data VARCHAR(500);
BEGIN
    v_c = p_c;
    UPDATE warehouse SET w_ytd = w_ytd + :p_amount WHERE w_id = :p_w;
    SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse
     WHERE w_id = :p_w
      INTO :v_w_name, :v_w_street_1, :v_w_street_2, :v_w_city, :v_w_state, :v_w_zip;
    IF (p_skip_district = 0) THEN
        UPDATE district SET d_ytd = d_ytd + :p_amount WHERE d_w_id = :p_w AND d_id = :p_d;
    SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district
     WHERE d_w_id = :p_w AND d_id = :p_d
      INTO :v_d_name, :v_d_street_1, :v_d_street_2, :v_d_city, :v_d_state, :v_d_zip;
{_BY_NAME.format(w="p_c_w", d="p_c_d")}
    SELECT c_first, c_middle, c_last, c_balance, c_credit, c_data FROM customer
     WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :v_c
       FOR UPDATE WITH LOCK INTO :v_first, :v_middle, :v_last, :v_balance, :v_credit, :v_data;
    IF (v_credit = 'BC') THEN
        UPDATE customer SET c_balance = c_balance - :p_amount,
            c_ytd_payment = c_ytd_payment + :p_amount, c_payment_cnt = c_payment_cnt + 1,
            c_data = LEFT(:v_c || ' ' || :p_c_d || ' ' || :p_c_w || ' ' || :p_d || ' ' || :p_w
                || ' ' || :p_amount || ' | ' || :v_data, 500)
         WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - :p_amount,
            c_ytd_payment = c_ytd_payment + :p_amount, c_payment_cnt = c_payment_cnt + 1
         WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :v_c;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (:v_c, :p_c_d, :p_c_w, :p_d, :p_w, LOCALTIMESTAMP, :p_amount,
        LEFT(:v_w_name || '    ' || :v_d_name, 24));
END""",  # noqa: S608 - our own constants
    "order_status": f"""
CREATE OR ALTER PROCEDURE tpcc_order_status (p_w INT, p_d INT, p_c INT, p_last VARCHAR(16))
AS
    DECLARE v_c INT; DECLARE v_n INT; DECLARE v_o INT; DECLARE v_carrier INT;
    DECLARE v_item INT; DECLARE v_supply INT; DECLARE v_quantity INT;
    DECLARE v_balance DECIMAL(12,2); DECLARE v_amount DECIMAL(6,2);
    DECLARE v_first VARCHAR(16); DECLARE v_middle CHAR(2); DECLARE v_last VARCHAR(16);
    DECLARE v_entry TIMESTAMP; DECLARE v_delivered TIMESTAMP;
BEGIN
    v_c = p_c;
{_BY_NAME.format(w="p_w", d="p_d")}
    SELECT c_balance, c_first, c_middle, c_last FROM customer
     WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_id = :v_c
      INTO :v_balance, :v_first, :v_middle, :v_last;
    SELECT FIRST 1 o_id, o_entry_d, o_carrier_id FROM orders
     WHERE o_w_id = :p_w AND o_d_id = :p_d AND o_c_id = :v_c ORDER BY o_id DESC
      INTO :v_o, :v_entry, :v_carrier;
    IF (v_o IS NOT NULL) THEN
        FOR SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
              FROM order_line WHERE ol_w_id = :p_w AND ol_d_id = :p_d AND ol_o_id = :v_o
              INTO :v_item, :v_supply, :v_quantity, :v_amount, :v_delivered DO
            v_n = 0;  -- each line read, as the client reads them
END""",  # noqa: S608 - our own constants
    "delivery": f"""
CREATE OR ALTER PROCEDURE tpcc_delivery (p_w INT, p_carrier INT)
AS
    DECLARE v_d INT; DECLARE v_o INT; DECLARE v_c INT; DECLARE v_total DECIMAL(12,2);
BEGIN
    v_d = 1;
    WHILE (v_d <= {DISTRICTS}) DO
    BEGIN
        v_o = NULL;
        SELECT FIRST 1 no_o_id FROM new_order WHERE no_w_id = :p_w AND no_d_id = :v_d
         ORDER BY no_o_id FOR UPDATE WITH LOCK INTO :v_o;
        -- none: no undelivered order here (clause 2.7.4.2); no row deleted: delivered
        -- by another terminal meanwhile
        IF (v_o IS NOT NULL) THEN
        BEGIN
            DELETE FROM new_order WHERE no_w_id = :p_w AND no_d_id = :v_d AND no_o_id = :v_o;
            IF (ROW_COUNT > 0) THEN
            BEGIN
                SELECT o_c_id FROM orders WHERE o_w_id = :p_w AND o_d_id = :v_d AND o_id = :v_o
                  INTO :v_c;
                UPDATE orders SET o_carrier_id = :p_carrier
                 WHERE o_w_id = :p_w AND o_d_id = :v_d AND o_id = :v_o;
                UPDATE order_line SET ol_delivery_d = LOCALTIMESTAMP
                 WHERE ol_w_id = :p_w AND ol_d_id = :v_d AND ol_o_id = :v_o;
                SELECT sum(ol_amount) FROM order_line
                 WHERE ol_w_id = :p_w AND ol_d_id = :v_d AND ol_o_id = :v_o INTO :v_total;
                UPDATE customer SET c_balance = c_balance + COALESCE(:v_total, 0),
                    c_delivery_cnt = c_delivery_cnt + 1
                 WHERE c_w_id = :p_w AND c_d_id = :v_d AND c_id = :v_c;
            END
        END
        v_d = v_d + 1;
    END
END""",  # noqa: S608 - our own constants
    "stock_level": """
CREATE OR ALTER PROCEDURE tpcc_stock_level (p_w INT, p_d INT, p_threshold INT)
AS
    DECLARE v_next INT; DECLARE v_low INT;
BEGIN
    SELECT d_next_o_id FROM district WHERE d_w_id = :p_w AND d_id = :p_d INTO :v_next;
    SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock
        ON s_w_id = ol_w_id AND s_i_id = ol_i_id
     WHERE ol_w_id = :p_w AND ol_d_id = :p_d AND ol_o_id >= :v_next - 20
       AND ol_o_id < :v_next AND s_quantity < :p_threshold INTO :v_low;
END""",
}
ARGUMENTS = {"new_order": 7, "payment": 8, "order_status": 4, "delivery": 2, "stock_level": 3}


def install(target: Target) -> None:
    """Create (or replace) the procedures in the benchmark's own database file."""
    conn = firebird_db.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(_EXCEPTION)
            for name in PROCEDURES:
                cur.execute(_SOURCES[name])
    finally:
        conn.close()


def uninstall(target: Target) -> None:
    """Drop the procedures, if there: Firebird drops no table a procedure uses, and a
    new load recreates the tables of a kept file."""
    conn = firebird_db.connect(target)
    try:
        with conn.cursor() as cur:
            for name in PROCEDURES:
                exists = (
                    f"SELECT 1 FROM rdb$procedures WHERE rdb$procedure_name = 'TPCC_{name.upper()}'"  # noqa: S608 - our names
                )
                cur.execute(
                    f"EXECUTE BLOCK AS BEGIN IF (EXISTS({exists})) THEN"
                    f" EXECUTE STATEMENT 'DROP PROCEDURE tpcc_{name}'; END"
                )
    finally:
        conn.close()


def encode_lines(lines: list[tuple[int, int, int]]) -> str:
    """A New-Order's (item, supplying warehouse, quantity) lines, fixed-width digits."""
    return "".join(
        f"{item:0{ITEM_DIGITS}d}{supply:0{SUPPLY_DIGITS}d}{quantity:0{QUANTITY_DIGITS}d}"
        for item, supply, quantity in lines
    )


class FirebirdProcedureTerminal(ProcedureCalls, Terminal):
    """A terminal whose transactions are one procedure call each, then a commit."""

    def __init__(self, target: Target, *args: Any, **kwargs: Any) -> None:
        super().__init__(target, *args, **kwargs)
        self.calls = {
            name: self.conn.prepare(f"EXECUTE PROCEDURE tpcc_{name} ({', '.join('?' * count)})")
            for name, count in ARGUMENTS.items()
        }
        self.database_error = firebird_db.module().DatabaseError

    def connect(self, target: Target) -> firebird_isc.Session:
        # The calls through the client library's ISC API; the terminal's rollbacks go to
        # the session's transaction.
        return firebird_isc.Session(target)

    def _call(self, name: str, parameters: tuple) -> None:
        try:
            self.calls[name].execute(parameters)
        except self.database_error as exc:
            if UNUSED_ITEM in str(exc):
                raise UserRollback from exc
            raise
        self.conn.commit()

    def attempt(self, body: Any, inputs: tuple) -> None:
        body(None, *inputs)  # committed by _call

    def new_order(self, cur: Any, d: int, c: int, lines: list[tuple[int, int, int]]) -> None:
        w = self.home
        all_local = int(all(supply == w for _, supply, _ in lines))
        step = 2 if self.sabotage == "new_order_skips_an_id" else 1
        extra = int(self.sabotage == "new_order_miscounts_lines")
        self._call("new_order", (w, d, c, encode_lines(lines), all_local, step, extra))

    def payment(self, cur: Any, d: int, c_w: int, c_d: int, customer: Any, amount: Decimal) -> None:
        by_name = isinstance(customer, str)
        fallback = self.customer_id() if by_name else customer
        skip = int(self.sabotage == "payment_skips_district")
        last = customer if by_name else None
        self._call("payment", (self.home, d, c_w, c_d, fallback, last, amount, skip))

    def close(self) -> None:
        self.conn.close()
