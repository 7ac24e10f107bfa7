"""select-update and tpcb on the real Firebird 3, through firebird-driver, and the SQL the
agent gives it.

Each run works in a database file of its own next to the DSN's
(``<stem>_benchhub_<benchmark>.fdb``); the DSN's own file is a database the test makes
with a table of the user's, which every run, stopped or not, leaves as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from array import array
from decimal import Decimal

import _databases as dbs
import pytest
from _compiled import built
from benchhub_agent import db, firebird_db, firebird_isc
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _firebird as fb
from benchhub_agent.benchmarks import _select_update_clients, _tpcb_processes, select_update, tpcb
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.placement import UNPINNED
from benchhub_agent.replay import replay
from contract_server import ContractServer
from test_cli import AGENT, agent
from test_like import published_run, serve


def users_database(target: Target) -> fb.FirebirdDatabase:
    """The DSN's own database: the user's, with 7 rows of theirs."""
    users = fb.FirebirdDatabase.from_target(target)
    fb.recreate(users, "the user's own")
    fb.isql(
        users,
        "CREATE TABLE customer_orders (id integer, total numeric(10, 2));\nCOMMIT;\n"
        + "".join(f"INSERT INTO customer_orders VALUES ({i}, {i}.5);\n" for i in range(7))
        + "COMMIT;\n",
    )
    return users


def users_rows(users: fb.FirebirdDatabase) -> list[str]:
    return fb.query_values(users, "SELECT count(*), sum(total) FROM customer_orders")


def own_file(target: Target, benchmark: str) -> str:
    return dbc.own_firebird_path(fb.FirebirdDatabase.from_target(target).path, benchmark)


# --- the SQL the benchmarks write once, in Firebird's words ----------------------------------


def test_the_other_engines_phrases_become_firebirds():
    delivery = "SELECT no_o_id FROM new_order WHERE no_w_id = %s ORDER BY no_o_id LIMIT 1"
    assert firebird_db.firebird_sql(delivery + " FOR UPDATE") == (
        "SELECT no_o_id FROM new_order WHERE no_w_id = ? ORDER BY no_o_id ROWS 1"
        " FOR UPDATE WITH LOCK"
    )
    assert firebird_db.firebird_sql("CREATE TABLE h (d timestamp NULL, n int NOT NULL)") == (
        "CREATE TABLE h (d timestamp, n int NOT NULL)"
    )
    dropped = firebird_db.firebird_sql("DROP TABLE IF EXISTS pgbench_history")
    assert "rdb$relation_name = 'PGBENCH_HISTORY'" in dropped
    assert "EXECUTE STATEMENT 'DROP TABLE PGBENCH_HISTORY'" in dropped


def test_literals_keep_their_values_through_the_server():
    target = dbc.in_own_schema(dbs.firebird("literals"), "literals")
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE kinds (n int, m decimal(12, 2), t decimal(4, 4), s varchar(30),"
                " d timestamp)"
            )
        row = (-42, 1234.56, 0.0007, "it's O'Brien's", dt.datetime(2026, 3, 4, 5, 6, 7, 891200))
        firebird_db.insert_rows(conn, "kinds", [row, (None, None, None, None, None)])
        with conn.cursor() as cur:
            cur.execute("SELECT n, m, t, s, d FROM kinds ORDER BY n NULLS LAST")
            assert cur.fetchall() == [
                (-42, Decimal("1234.56"), Decimal("0.0007"), "it's O'Brien's", row[4]),
                (None, None, None, None, None),
            ]
    finally:
        conn.close()
        dbc.remove_own_objects(dbs.firebird("literals"), "literals")


FIRST_CONNECTS_AT_ONCE = """
import sys, threading
from benchhub_agent import firebird_db
from benchhub_agent.target import Target

target = Target.parse(sys.argv[1])
start = threading.Barrier(8)
failed = []

def connect():
    start.wait()
    try:
        firebird_db.connect_raw(target).close()
    except Exception as exc:
        failed.append(repr(exc))

threads = [threading.Thread(target=connect) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(failed)
"""


def test_threads_of_a_new_process_connecting_at_once_all_connect():
    """The first connects of a process load the client library's interfaces: the
    clients of a multi-threaded load start that way."""
    target = dbs.firebird("first_connects")
    users_database(target)
    for _ in range(3):  # a race: each try is a new process
        done = subprocess.run(
            [sys.executable, "-c", FIRST_CONNECTS_AT_ONCE, target.dsn],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr[-2000:]


def test_the_server_is_described_with_its_mode_pages_and_temp_directories():
    target = dbs.firebird("describe")
    users_database(target)
    info = db.describe(target)
    assert info.engine == "firebird"
    assert "Firebird 3" in info.version_string and "\n" not in info.version_string
    assert info.protocol == "tcp_loopback"
    assert info.driver == "firebird-driver" and info.driver_version
    assert info.architecture == "superserver"  # Debian's firebird.conf leaves Super
    settings = info.settings
    assert settings["ServerMode"] == "Super"
    assert settings["page_size"] == 8192  # what the agent's own files are made with
    assert settings["page_buffers"] > 0
    assert all(os.path.isdir(path) for path in firebird_db.temp_directories(settings))
    assert info.data_directory == dbs.FIREBIRD_DIR
    assert info.server_pid == fb.server_pid()


def test_the_configuration_read_is_the_one_of_the_servers_version():
    assert fb.debian_config_file("LI-V4.0.5.3140 Firebird 4.0").parts[-2:] == (
        "4.0",
        "firebird.conf",
    )
    assert fb.debian_config_file("WI-V5.0.1.1469 Firebird 5.0").parts[-2] == "5.0"
    # This machine has Firebird 3 only: a Firebird 4 is not described with 3's file.
    assert firebird_db.configuration(None, "LI-V4.0.5.3140 Firebird 4.0") == {}
    assert firebird_db.configuration(None, "LI-V3.0.11.33637 Firebird 3.0")["ServerMode"]


# --- select-update ----------------------------------------------------------------------


def test_select_update_keeps_every_increment_in_its_own_file_and_the_users_database():
    target = dbs.firebird("su_invariant")
    users = users_database(target)
    before = users_rows(users)

    result = select_update.run(
        target, dbs.options(clients=[1, 3], transactions=150, repeat=1), SilentProgress()
    )

    values = {(m.metric, m.parameters["clients"]): m.value for m in result.measurements}
    assert values[("errors", 1)] == values[("errors", 3)] == 0
    assert values[("throughput", 3)] > 0
    assert "invariant held: sum(c2) = committed transactions" in " ".join(result.notes)
    built = _select_update_clients.compiled_loop() is not None
    assert f"run by the agent's {'compiled' if built else 'Python'} loop" in " ".join(result.notes)
    assert result.client["driver"] == firebird_isc.DRIVER
    assert result.database["engine"] == "firebird"
    assert {"ServerMode", "page_size", "page_buffers", "TempDirectories"} <= set(
        result.database["settings"]
    )
    assert dbs.document_errors(result) == []
    assert users_rows(users) == before
    assert not os.path.exists(own_file(target, "select-update"))  # removed after the run


def test_select_update_on_firebird_refuses_to_report_a_table_changed_behind_it():
    target = dbc.in_own_schema(dbs.firebird("su_tampered"), select_update.NAME)

    def tamper() -> None:  # after the reset, before the clients: someone else's update
        conn = dbc.connect(target)
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {select_update.TABLE} SET c2 = c2 + 1000 WHERE c1 = 17")
        conn.close()

    with pytest.raises(RuntimeError, match=r"sum\(c2\) = 1100 but 100 transactions"):
        select_update.run_point(
            target,
            clients=2,
            transactions=100,
            duration=None,
            warmup=0.0,
            locking="for_update",
            processes=None,
            pin=UNPINNED,
            progress=SilentProgress(),
            label="tampered",
            checkpoint=tamper,
        )


@pytest.fixture
def su_table():
    """select-update's table in a database file of the test's own."""
    target = dbs.firebird("su_client")
    database = fb.FirebirdDatabase.from_target(target)
    fb.recreate(database, "the select-update client's test")
    select_update.reset_table(target)
    yield target
    fb.drop(database)


def run_alone(client, quota: int, seed: int = 3):
    return client.run_alone(quota, (0.0, None), random.Random(seed), [0], 0, threading.Event())


@pytest.fixture(params=["compiled loop", "Python loop"])
def loop(request, monkeypatch):
    """Each client test twice: the transactions in the agent's compiled loop, and in the
    Python loop that runs where it was not built."""
    if request.param == "Python loop":
        monkeypatch.setattr(_select_update_clients, "compiled_loop", lambda: None)
    else:
        compiled_loop()
    return request.param


def compiled_loop():
    """The agent's compiled Firebird loop, or the test skipped where it was not built."""
    return built(_select_update_clients.compiled_loop)


def test_the_compiled_loop_refuses_what_it_cannot_run_before_calling_the_library():
    """Every check comes before the first library call: with at == end nothing is called,
    so wrong arguments meet the check alone (the addresses are never followed)."""
    loop = compiled_loop()
    addresses, keys, micros = (1,) * 12, array("i", [5, 6]), array("q", [0, 0])
    assert loop.run(addresses, keys, micros, 2, 2, 0.0, 1.0, 0.0) == (2, False)
    refused = [
        ((1,) * 11, keys, micros, 0, 0, ValueError, "12 integers"),
        ((1,) * 11 + (0,), keys, micros, 0, 0, ValueError, "item 11 is 0"),
        (addresses, array("q", [5, 6]), micros, 0, 0, TypeError, "keys: not an array of 'i'"),
        (addresses, keys, array("i", [0, 0]), 0, 0, TypeError, "micros: not an array of 'q'"),
        (addresses, keys, bytes(16), 0, 0, BufferError, "not writable"),
        (addresses, keys, array("q", [0]), 0, 2, ValueError, "micros: 1 items, fewer than 2"),
        (addresses, keys, micros, 0, 3, ValueError, "keys: 2 items, fewer than 3"),
        (addresses, keys, micros, 2, 1, ValueError, "not 0 <= at <= end"),
    ]
    for addresses_, keys_, micros_, at, end, error, message in refused:
        with pytest.raises(error, match=re.escape(message)):
            loop.run(addresses_, keys_, micros_, at, end, 0.0, 1.0, 0.0)


class ScriptedLoop:
    """The compiled loop's contract without a server: each call commits the keys of its
    script's next answer, then fails (or not), recording the keys it was given."""

    def __init__(self, answers: list[tuple[int, bool]]) -> None:
        self.answers, self.calls = list(answers), []

    def run(self, addresses, keys, micros, at, end, began_ago, until, window_from):
        self.calls.append((list(keys[at:end]), began_ago > 0))
        commits, failed = self.answers.pop(0) if self.answers else (end - at, False)
        for index in range(at, at + commits):
            micros[index] = 100 + index
        if failed:
            micros[at + commits] = 0
        return at + commits, failed


def test_the_compiled_path_retries_a_key_then_gives_it_up_and_stops_between_chunks(
    su_table, monkeypatch
):
    """Out of attempts at a retryable failure: the key counts as an error (not one in a
    row) and the next key runs; a set stop ends the run at the next chunk."""
    attempts = _select_update_clients.MAX_ATTEMPTS
    scripted = ScriptedLoop([(2, True)] + [(0, True)] * (attempts - 1))
    monkeypatch.setattr(_select_update_clients, "compiled_loop", lambda: scripted)
    client = select_update.FirebirdClient(su_table, "for_update")
    monkeypatch.setattr(client, "_roll_back", lambda key: (f"conflict on {key}", True))
    stop = threading.Event()

    class Progress(list):
        def __setitem__(self, slot, value):
            super().__setitem__(slot, value)
            stop.set()  # stopped while the first chunk ran

    progress = Progress([0])
    try:
        tally = client.run_alone(None, (0.0, None), random.Random(4), progress, 0, stop)
    finally:
        client.close()
    draw = random.Random(4).random
    chunk = [int(draw() * select_update.ROWS) + 1 for _ in range(client.CHUNK)]
    assert scripted.calls[0] == (chunk, False)
    # The third key, again and again, each time from its first attempt; then the rest.
    assert [keys for keys, _ in scripted.calls[1:attempts]] == [chunk[2:]] * (attempts - 1)
    assert [retry for _, retry in scripted.calls[1:attempts]] == [True] * (attempts - 1)
    assert scripted.calls[attempts] == (chunk[3:], False)
    assert len(scripted.calls) == attempts + 1  # stopped: no second chunk
    assert (tally.committed, tally.errors, tally.retries) == (client.CHUNK - 1, 1, attempts)
    assert progress == [client.CHUNK]


def table_rows(target: Target) -> list[str]:
    database = fb.FirebirdDatabase.from_target(target)
    return fb.query_values(database, f"SELECT c2 FROM {select_update.TABLE} ORDER BY c1")


def test_both_loops_run_the_same_keys_in_the_same_order(su_table, monkeypatch):
    """The compiled loop draws its keys in chunks, the Python loop one at a time: a seed
    must still make the same transactions, whichever loop ran (each row's c2 counts the
    times its key was drawn; 203 is not a multiple of the chunk)."""
    compiled_loop()

    def run(loop: str):
        if loop == "Python":
            monkeypatch.setattr(_select_update_clients, "compiled_loop", lambda: None)
        select_update.reset_table(su_table)
        client = select_update.FirebirdClient(su_table, "for_update")
        try:
            return run_alone(client, 203, seed=11), table_rows(su_table)
        finally:
            client.close()

    compiled, after_compiled = run("compiled")
    python, after_python = run("Python")
    assert after_python == after_compiled
    assert len(set(after_compiled)) > 3  # keys drawn unevenly: an order to keep
    for tally in (compiled, python):
        assert (tally.committed, tally.errors, tally.retries) == (203, 0, 0)
        assert tally.histogram.count == 203


def test_a_timed_run_counts_only_what_ended_in_its_window(su_table, loop):
    """Warm-up, window, deadline: every commit counts in the table's total, only those
    that ended in the window in the latencies."""
    client = select_update.FirebirdClient(su_table, "for_update")
    started = time.perf_counter()
    try:
        tally = client.run_alone(
            None, (started + 0.3, started + 0.8), random.Random(5), [0], 0, threading.Event()
        )
    finally:
        client.close()
    # The window is 0.5 s of the run's 0.8, so about 62 % of the commits on a steady
    # machine; a loaded one stalls where it will (325 of 365 once, in CI beside other
    # work): some commits before or after the window, some in it.
    assert 0 < tally.histogram.count < tally.committed
    assert tally.ended_at >= started + 0.8
    assert tally.histogram.max_ms() < 800
    assert select_update.table_total(su_table) == tally.committed


def test_a_firebird_client_retries_the_update_conflict_of_a_row_changed_while_it_waited(
    su_table, loop
):
    holder = firebird_isc.Session(su_table)
    holder.prepare(f"UPDATE {select_update.TABLE} SET c2 = c2 + 1000").execute()
    # Without WITH LOCK: the SELECT reads the committed value, the UPDATE waits for the
    # holder, whose commit makes it a conflict (WITH LOCK would read the new value).
    client = select_update.FirebirdClient(su_table, "none")
    committer = threading.Timer(0.5, holder.commit)  # while the client waits on its lock
    committer.start()
    try:
        tally = run_alone(client, 20)
    finally:
        committer.join()
        client.close()
        holder.close()
    assert (tally.committed, tally.errors) == (20, 0)
    assert tally.retries >= 1
    assert tally.histogram.count == 20
    # The conflicted transaction's latency counts from its first attempt, which waited for
    # the holder's commit (0.5 s after the timer started).
    assert tally.histogram.max_ms() >= 300
    # The conflicted key itself ran again: each row counts its key's draws.
    draw = random.Random(3).random
    keys = [int(draw() * select_update.ROWS) + 1 for _ in range(20)]
    assert table_rows(su_table) == [str(1000 + keys.count(key)) for key in range(1, 101)]


def test_a_firebird_client_counts_a_missing_row_as_an_error_and_goes_on(su_table, loop):
    database = fb.FirebirdDatabase.from_target(su_table)
    fb.isql(database, f"DELETE FROM {select_update.TABLE};\nCOMMIT;\n")
    client = select_update.FirebirdClient(su_table, "for_update")
    try:
        tally = run_alone(client, 40)
        with pytest.raises(select_update.Failed, match="row c1=7 is missing"):
            client.transaction(7)
        fb.isql(database, f"INSERT INTO {select_update.TABLE} VALUES (7, 0);\nCOMMIT;\n")
        client.transaction(7)  # each failed one rolled back: the client goes on
    finally:
        client.close()
    assert (tally.committed, tally.errors, tally.retries) == (0, 40, 0)
    assert fb.query_values(database, f"SELECT c2 FROM {select_update.TABLE}") == ["1"]


# --- tpcb ---------------------------------------------------------------------------------


def test_tpcb_keeps_the_balances_and_retries_what_firebird_calls_a_conflict():
    target = dbs.firebird("tpcb_invariant")
    users = users_database(target)
    before = users_rows(users)
    options = dbs.options(
        clients=[1, 2], duration=1.0, warmup=0.2, repeat=1, scale=1, load_engine="agent", keep=True
    )

    result = tpcb.run(target, options, SilentProgress())

    points = dbs.by_point(result)
    for n in (1, 2):
        assert points[("tps", (("clients", n),))].value > 0
    assert result.parameters["query_mode"] == "prepared"
    assert result.client["driver"] == firebird_isc.DRIVER
    notes = " ".join(result.notes)
    assert "invariant held: sum(abalance) = sum(tbalance) = sum(bbalance)" in notes
    assert "update conflicts retried" in notes and "clients=2:" in notes
    workspace = dbc.in_own_schema(target, tpcb.NAME)
    accounts, tellers, branches = tpcb.balances(workspace)
    assert accounts == tellers == branches
    assert dbs.document_errors(result) == []
    assert users_rows(users) == before
    dbc.remove_own_objects(target, tpcb.NAME)
    assert not os.path.exists(own_file(target, tpcb.NAME))
    assert users_rows(users) == before


def test_a_failing_tpcb_statement_on_firebird_is_rolled_back_and_counted():
    target = dbc.in_own_schema(dbs.firebird("tpcb_failing"), tpcb.NAME)
    tpcb.initialize(target, 1)
    conn = dbc.connect(target)
    with conn.cursor() as cur:
        # The INSERT, last statement before COMMIT, fails for about half the transactions.
        cur.execute("ALTER TABLE pgbench_history ADD CONSTRAINT half CHECK (delta > 0)")
    conn.close()

    histogram, failed, _, _ = _tpcb_processes.run_agent_load(target, 1, 1, 0.0, 1.0, 0)

    accounts, tellers, branches = tpcb.balances(target)
    conn = dbc.connect(target)
    with conn.cursor() as cur:
        cur.execute("SELECT count(*), sum(delta) FROM pgbench_history")
        history, deltas = cur.fetchone()
    conn.close()
    assert failed > 0
    # Nothing of a failed transaction stayed, and every committed one was measured.
    assert accounts == tellers == branches == deltas
    assert history == histogram.count > 0
    dbc.remove_own_objects(dbs.firebird("tpcb_failing"), tpcb.NAME)


def test_tpcb_on_firebird_is_replayed_with_its_prepared_statements():
    run = published_run(
        "tpcb",
        {"scale": 1, "duration": 1.0, "warmup": 0.0, "clients": "1", "load_engine": "agent",
         "query_mode": "prepared"},
        server={"engine": "firebird"},
    )  # fmt: skip
    assert replay(run, "firebird", set()).options == [
        "--engine", "agent", "--scale", "1", "--duration", "1", "--warmup", "0",
        "--clients", "1", "--repeat", "1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("benchmark", "parameters", "options"),
    [
        ("select-update", {"transactions": 60, "rows": 100, "locking": "for_update"}, []),
        ("tpcb", {"scale": 1, "duration": 0.5, "warmup": 0.0, "clients": "2",
                  "load_engine": "agent", "query_mode": "prepared"}, []),
        # Debian's TempCacheLimit: the server's, recorded, not set by the run.
        ("external-sort", {"rows": 2000, "sort_memory": "64M", "fetch": "all_rows"}, []),
    ],
)  # fmt: skip
def test_run_like_repeats_a_firebird_run_on_firebird(benchmark, parameters, options, outbox_dir):
    target = dbs.firebird(f"like_{benchmark}")
    users = users_database(target)
    run = published_run(
        benchmark,
        parameters,
        server={"engine": "firebird"},
        measurements=[
            {"metric": "throughput", "unit": "tx/s", "direction": "higher",
             "parameters": {"clients": 2}, "value": 50.0, "samples": [50.0]},
        ],
    )  # fmt: skip
    with ContractServer() as server:
        url = serve(server, run)
        done = agent("run", "--like", url, "--dsn", target.dsn, "--dry-run", *options)
    assert done.returncode == 0, done.stderr
    repeated = json.loads(done.stdout)["runs"][0]
    assert repeated["benchmark"] == benchmark
    assert repeated["parameters"] == parameters
    assert users_rows(users) == ["7", "24.50"]


# --- Ctrl-C and SIGKILL -------------------------------------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_a_run_stopped_mid_load_leaves_the_dsns_database_as_it_was(stop):
    import subprocess

    target = dbs.firebird(f"fb_stopped_{stop.name.lower()}")
    users = users_database(target)
    before = users_rows(users)
    own = own_file(target, tpcb.NAME)
    long_run = subprocess.Popen(
        [*AGENT, "run", "tpcb", "--dsn", target.dsn, "--clients", "2", "--duration", "60",
         "--warmup", "0", "--repeat", "1", "--dry-run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(own):
            assert time.monotonic() < deadline, "the agent never made its own file"
            assert long_run.poll() is None, long_run.communicate()[1]
            time.sleep(0.1)
        time.sleep(4)  # into the load
        long_run.send_signal(stop)
        long_run.wait(60)
    finally:
        if long_run.poll() is None:
            long_run.kill()
    assert users_rows(users) == before
    assert os.path.exists(users.path)
    if stop == signal.SIGINT:
        assert not os.path.exists(own)  # Ctrl-C: the run removed its own file
    time.sleep(1)  # a killed run's clients: the server notices their sockets closed

    again = agent(
        "run", "tpcb", "--dsn", target.dsn, "--clients", "1", "--duration", "0.5",
        "--warmup", "0", "--repeat", "1", "--dry-run",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert users_rows(users) == before
    assert not os.path.exists(own)


def test_the_agents_own_file_is_removed_even_while_a_client_of_its_own_is_attached():
    """A client cut by Ctrl-C in the middle of a call stays attached until its process
    ends; the agent's file goes all the same (and only the agent's file)."""
    target = dbs.firebird("attached")
    users = users_database(target)
    before = users_rows(users)
    workspace = dbc.in_own_schema(target, "select-update")
    lingering = firebird_db.connect_raw(workspace)
    users_client = firebird_db.connect_raw(target)
    try:
        dbc.remove_own_objects(target, "select-update")
        assert not os.path.exists(own_file(target, "select-update"))
        assert users_rows(users) == before
        assert users_client.info.page_size == 8192  # the user's attachment was left alone
    finally:
        firebird_db.close(lingering)
        firebird_db.close(users_client)
