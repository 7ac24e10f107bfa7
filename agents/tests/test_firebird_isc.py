"""The load's calls of Firebird's client library (its ISC API), on the real Firebird 3: what
they send arrives as sent, what they read is what firebird-driver reads, and the server's
errors come back as firebird-driver's, with their SQLSTATE."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from decimal import Decimal

import _databases as dbs
import pytest
from benchhub_agent import firebird_db, firebird_isc
from benchhub_agent.benchmarks import _firebird as fb


@pytest.fixture
def session():
    target = dbs.firebird("calls")
    database = fb.FirebirdDatabase.from_target(target)
    fb.recreate(database, "the direct calls' test")
    fb.isql(
        database,
        "CREATE TABLE account (id integer NOT NULL PRIMARY KEY, owner varchar(12),"
        " balance numeric(9, 2), visits bigint);\nCOMMIT;\n"
        "INSERT INTO account VALUES (3, 'ana', 10.25, 1);\n"
        "INSERT INTO account VALUES (8, NULL, NULL, NULL);\nCOMMIT;\n",
    )
    found = firebird_isc.Session(target)
    found.statement = found.prepare
    yield found, target
    found.close()
    fb.drop(database)


def rows(target, sql: str) -> list[tuple]:
    conn = firebird_db.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return [tuple(row) for row in cur.fetchall()]
    finally:
        conn.close()


def test_values_go_and_come_back_as_firebird_driver_gives_them(session):
    calls, target = session
    insert = calls.statement("INSERT INTO account VALUES (?, ?, ?, ?)")
    insert.execute((34, None, Decimal("0.5"), None))
    insert.execute((21, "zoë-ünïcode", Decimal("-1234567.89"), 2**40 + 7))  # no NULL left over
    select = calls.statement("SELECT owner, balance, visits FROM account WHERE id = ?")
    assert select.execute((21,)) == ("zoë-ünïcode", Decimal("-1234567.89"), 2**40 + 7)
    assert select.execute((8,)) == (None, None, None)
    assert select.execute((99,)) is None  # no row: no error
    calls.commit()
    assert rows(target, "SELECT id, owner, balance, visits FROM account ORDER BY id") == [
        (3, "ana", Decimal("10.25"), 1),
        (8, None, None, None),
        (21, "zoë-ünïcode", Decimal("-1234567.89"), 2**40 + 7),
        (34, None, Decimal("0.50"), None),
    ]


def test_a_rollback_undoes_the_transaction_and_the_next_one_starts_anew(session):
    calls, target = session
    update = calls.statement("UPDATE account SET balance = balance + ? WHERE id = ?")
    update.execute((Decimal("1.50"), 3))
    calls.rollback()
    update.execute((Decimal("2.25"), 3))
    calls.commit()
    assert rows(target, "SELECT balance FROM account WHERE id = 3") == [(Decimal("12.50"),)]


def test_a_commit_with_no_transaction_open_does_nothing(session):
    calls, target = session
    calls.commit()  # nothing begun: the library, given no transaction, crashed the process
    update = calls.statement("UPDATE account SET visits = visits + 1 WHERE id = ?")
    update.execute((3,))
    calls.commit()
    calls.commit()  # committed already
    assert rows(target, "SELECT visits FROM account WHERE id = 3") == [(2,)]


def test_the_servers_errors_arrive_with_their_sqlstate_and_leave_the_session_usable(session):
    calls, target = session
    insert = calls.statement("INSERT INTO account (id, owner) VALUES (?, ?)")
    with pytest.raises(firebird_db.module().DatabaseError) as raised:
        insert.execute((3, "twice"))
    assert raised.value.sqlstate == "23000"  # the primary key
    assert "PRIMARY" in str(raised.value) or "primary" in str(raised.value)
    calls.rollback()
    with pytest.raises(firebird_db.module().DatabaseError) as raised:
        insert.execute((5, "thirteen char"))  # fits the buffer, not the column
    assert raised.value.sqlstate == "22001"
    calls.rollback()
    # VARCHAR(12) in UTF8: a buffer of 48 bytes, which a longer value would overrun.
    with pytest.raises(ValueError, match="longer than the parameter's 48 bytes"):
        insert.execute((5, "é" * 25))
    insert.execute((5, "bo"))
    calls.commit()
    assert rows(target, "SELECT id, owner FROM account WHERE id = 5") == [(5, "bo")]


def test_a_null_does_not_stay_in_the_next_execute(session):
    calls, target = session
    update = calls.statement("UPDATE account SET visits = ? WHERE id = ?")
    select = calls.statement("SELECT visits, id FROM account WHERE id = ?")
    update.execute((None, 3))
    assert select.execute((3,)) == (None, 3)
    update.execute((5, 3))  # integers only: packed in one call, the NULL flag reset first
    assert select.execute((3,)) == (5, 3)
    calls.commit()
    assert rows(target, "SELECT visits FROM account WHERE id = 3") == [(5,)]


def test_the_session_is_an_attachment_of_its_own_and_its_close_ends_it(session):
    _calls, target = session
    attachments = "SELECT COUNT(*) FROM mon$attachments WHERE mon$attachment_id <> CURRENT_CONNECTION AND mon$remote_protocol IS NOT NULL"  # noqa: E501
    other = firebird_isc.Session(target)
    before = rows(target, attachments)[0][0]
    other.close()
    other.close()  # closed already: nothing to do
    assert rows(target, attachments) == [(before - 1,)]


def test_the_client_library_names_its_firebird_version():
    assert firebird_isc.client_version().startswith(("3.", "4.", "5."))


SESSIONS_AT_ONCE = """
import sys, threading
from benchhub_agent import firebird_isc
from benchhub_agent.target import Target

target = Target.parse(sys.argv[1])
start = threading.Barrier(8)
failed = []

def attach():
    start.wait()
    try:
        session = firebird_isc.Session(target)
        session.prepare("SELECT id FROM account WHERE id = ?").execute((3,))
        session.close()
    except Exception as exc:
        failed.append(repr(exc))

threads = [threading.Thread(target=attach) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(failed)
"""


def test_threads_of_a_new_process_attaching_at_once_all_attach(session):
    """A multi-threaded load's clients start that way: nothing a session needs may be
    loaded lazily and unguarded (firebird-driver's TPB builder was, and broke them)."""
    _calls, target = session
    for _ in range(3):  # a race: each try is a new process
        done = subprocess.run(
            [sys.executable, "-c", SESSIONS_AT_ONCE, target.dsn],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr[-2000:]


def test_its_transactions_are_those_of_the_agents_other_firebird_connections():
    assert firebird_db.transaction_parameters() == firebird_isc.TPB


def test_a_missing_client_library_is_one_line_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(firebird_isc, "_library", None)
    monkeypatch.setattr(firebird_isc.ctypes.util, "find_library", lambda name: "libnone.so.9")

    with pytest.raises(firebird_db.DriverMissing) as missing:
        firebird_isc.library()

    assert str(missing.value).startswith("Firebird: the client library could not be loaded (")
    assert str(missing.value).endswith("; Debian: apt-get install libfbclient2")
    assert "libnone.so.9" in str(missing.value)


def test_integers_bound_as_c_ints_are_shared_by_statements_through_their_slots(session):
    calls, target = session
    values = (ctypes.c_int * 3)()  # the key, the visits read, the visits written
    select = calls.prepare("SELECT visits FROM account WHERE id = ?", integers=(values, (0,), (1,)))
    update = calls.prepare(
        "UPDATE account SET visits = ? WHERE id = ?", integers=(values, (2, 0), ())
    )
    assert select.execute((3,)) == (1,)
    assert list(values) == [3, 1, 0]
    values[2] = values[1] + 41
    assert update.run() == 0  # the key is the SELECT's: its slot is shared
    assert select.execute((3,)) == (42,)
    assert select.execute((99,)) is None
    calls.commit()
    assert rows(target, "SELECT id, visits FROM account ORDER BY id") == [(3, 42), (8, None)]
    with pytest.raises(firebird_isc.Unsupported):
        calls.prepare("SELECT visits FROM account WHERE id = ?", integers=(values, (), (1,)))
