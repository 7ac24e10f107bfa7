"""Nothing private leaves the machine, and the document says what was removed."""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import sys

import pytest
from _upload_servers import example
from benchhub_agent import document
from benchhub_agent.privacy import Identity, redact

ALICE = Identity(host_names=("alice-laptop.corp.example", "alice-laptop"), user_names=("alice",))


def on_ext4(path: str) -> str:
    return "ext4"


def redacted(doc: dict) -> tuple[dict, list]:
    return redact(doc, ALICE, on_ext4)


def with_note(text: str) -> dict:
    doc = example()
    doc["runs"][0]["note"] = text
    return doc


def test_sysinfo_of_a_path_that_does_not_exist_says_so(tmp_path):
    missing = tmp_path / "no" / "such"
    done = subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", "sysinfo", "--path", str(missing)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stdout  # a usage error, not the parent's storage
    assert f"no such path {str(missing)!r}" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("text", "private", "kind", "replacement"),
    [
        ("log in /home/alice/bench/out.txt", "/home/alice", "home_path", "HOME_PATH"),
        ("file /Users/Bob/x.fdb", "Bob", "home_path", "HOME_PATH"),
        (r"C:\Users\carol\AppData\fb.fdb", "carol", "home_path", "HOME_PATH"),
        ("written to /root/backup.gbk", "/root/", "home_path", "HOME_PATH"),
        ("server 192.168.17.4 port 5432", "192.168.17.4", "ip_address", "IP_ADDRESS"),
        ("server fe80::1c2d:3eff:fe4f:5a6b answered", "fe80::", "ip_address", "IP_ADDRESS"),
        ("ran on alice-laptop.corp.example today", "corp.example", "host_name", "HOSTNAME"),
        ("ran on ALICE-LAPTOP today", "ALICE-LAPTOP", "host_name", "HOSTNAME"),
        ("started by alice at noon", "alice", "user_name", "USER"),
    ],
)
def test_private_strings_are_replaced_and_listed_without_their_value(
    text, private, kind, replacement
):
    clean, findings = redacted(with_note(text))
    assert replacement in clean["runs"][0]["note"]
    assert private not in json.dumps(clean)
    assert [(f.kind, f.path) for f in findings] == [(kind, "$.runs[0].note")]
    assert clean["redacted"] == [
        {"kind": kind, "path": "$.runs[0].note", "replacement": replacement}
    ]
    document.validate(clean)  # the server's schema accepts the list


@pytest.mark.parametrize(
    "text",
    [
        "LI-V3.0.11.33637 Firebird 3.0",  # four numbers, not an address
        "PostgreSQL 15.10 (Debian 15.10-0+deb12u1) on x86_64-pc-linux-gnu",
        "10.11.6-MariaDB-0+deb12u1 Debian 12",
        "connected to 127.0.0.1 and ::1",  # loopback names no machine
        "pgbench -M prepared -c 8 -j 2 -T 10",
        "run by postgres and root",  # service accounts, not people
        "alicex and malice are other words",
        "12:30:45 elapsed",
    ],
)
def test_ordinary_text_is_left_alone(text):
    clean, findings = redacted(with_note(text))
    assert clean["runs"][0]["note"] == text
    assert findings == [] and "redacted" not in clean


def test_a_firebird_path_is_reduced_to_its_filesystem():
    doc = example()
    doc["source"]["command"] = (
        "benchhub-agent run backup --dsn "
        "'firebird://USER:***@HOST:3050//home/alice/bench.fdb' --rows 1000"
    )
    clean, findings = redacted(doc)
    assert clean["source"]["command"] == (
        "benchhub-agent run backup --dsn 'firebird://USER:***@HOST:3050/FILE_ON_EXT4' --rows 1000"
    )
    assert [f.kind for f in findings] == ["database_path"]


def test_several_findings_keep_their_places_and_the_original_is_untouched():
    doc = with_note("alice-laptop at 10.0.0.7 wrote /home/alice/a and /home/alice/b")
    doc["environment"]["os"]["kernel"] = "6.1.0-alice-laptop"
    original = copy.deepcopy(doc)
    clean, findings = redacted(doc)
    assert doc == original  # a copy is redacted, not the caller's document
    assert clean["runs"][0]["note"] == "HOSTNAME at IP_ADDRESS wrote HOME_PATH and HOME_PATH"
    assert sorted((f.path, f.kind) for f in findings) == [
        ("$.environment.os.kernel", "host_name"),
        ("$.runs[0].note", "home_path"),
        ("$.runs[0].note", "home_path"),
        ("$.runs[0].note", "host_name"),
        ("$.runs[0].note", "ip_address"),
    ]


def test_redacting_twice_changes_nothing_more():
    once, _ = redacted(with_note("/home/alice/x on 10.1.2.3"))
    twice, findings = redacted(once)
    assert findings == [] and twice == once


def test_this_machines_own_names_are_looked_for():
    identity = Identity.of_this_machine()
    assert socket.gethostname() in identity.host_names or socket.gethostname() in (
        "localhost",
        "",
    )


def test_sysinfo_show_redacted_says_what_is_removed(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", "sysinfo", "--json", "--show-redacted"],
        capture_output=True,
        text=True,
        check=True,
    )
    sections = json.loads(done.stdout)  # stdout: exactly what a document carries
    assert set(sections) >= {"hardware", "os"}
    assert "redaction(s); always removed: home paths, IP addresses" in done.stderr
    assert repr(socket.gethostname()) in done.stderr or len(socket.gethostname()) < 2


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "sysbench --mysql-host=db1.corp.example --mysql-user=carol oltp_read_write run",
            "sysbench --mysql-host=HOSTNAME --mysql-user=USER oltp_read_write run",
        ),
        ("pgbench -h pg-prod-7 -U dave -c 8 bench", "pgbench -h HOSTNAME -U USER -c 8 bench"),
        ("pgbench -hpg-prod-7 -Udave bench", "pgbench -hHOSTNAME -UUSER bench"),
        ("psql 'host=db2.example user=erin dbname=x'", "psql 'host=HOSTNAME user=USER dbname=x'"),
        ("hammerdb --pg_host db3 --host db3", "hammerdb --pg_host HOSTNAME --host HOSTNAME"),
    ],
)
def test_server_and_login_names_on_a_tools_command_line_are_replaced(command, expected):
    doc = example()
    doc["source"]["command"] = command
    clean, findings = redacted(doc)
    assert clean["source"]["command"] == expected
    assert {f.kind for f in findings} <= {"host_name", "user_name"}


@pytest.mark.parametrize(
    "command",
    [
        "pgbench -h /var/run/postgresql -U postgres -c 8 bench",  # a socket directory
        "sysbench --mysql-host=127.0.0.1 --mysql-user=root run",  # loopback, a service account
        "benchhub-agent run tpcb --dsn postgresql://USER@HOST:5432/bench --clients 1,8",
        "pgbench -h HOST -U USER",  # already placeholders
        "pgbench -c 8 -j 2 -T 10 -M prepared",  # no -h at all
    ],
)
def test_local_or_already_anonymous_command_lines_are_left_alone(command):
    doc = example()
    doc["source"]["command"] = command
    clean, findings = redacted(doc)
    assert clean["source"]["command"] == command and findings == []


# --- DSN options, Firebird paths with spaces, short user names inside tokens ---------

BOB = Identity(host_names=("ws17.lab.example", "ws17"), user_names=("bob",))


@pytest.mark.parametrize(
    ("dsn", "shape"),
    [
        (
            "postgresql://alice:S3cr%40t@db7.internal:6432/orders_2024?sslmode=verify-full"
            "&sslpassword=Hunter2%21x&sslkey=/home/alice/.pg/client.key"
            "&application_name=alice-laptop&options=-c%20search_path%3Dalice"
            "&connect_timeout=7&passfile=/etc/pgpass.d/alice&target_session_attrs=read-write",
            "postgresql://USER:***@HOST:6432/orders_2024?sslmode=verify-full&connect_timeout=7"
            "&target_session_attrs=read-write",
        ),
        (
            "mysql://bob@10.2.3.44:3307/shop?charset=utf8mb4&ssl_ca=/Users/bob/ca.pem"
            "&init_command=SET%20@owner%3D%27bob%27&program_name=bob-ws17",
            "mysql://USER@HOST:3307/shop?charset=utf8mb4",
        ),
        (
            "postgresql:///bench?sslpassword=&host=/run/pg-bob&sslmode=require&krbsrvname=bobk",
            "postgresql:///bench?sslmode=require&host=SOCKET_DIR",
        ),
        # A path's spaces are encoded: the DSN stays one word wherever it is printed.
        (
            "firebird://SYSDBA:masterkey@localhost:3050//srv/fb data/ag field.fdb",
            "firebird://USER:***@HOST:3050//srv/fb%20data/ag%20field.fdb",
        ),
        # An allowed option with a value that is not a plain word is dropped too.
        ("postgresql://u@h:5432/b?sslmode=%22bob%20%24x%22", "postgresql://USER@HOST:5432/b"),
    ],
)
def test_every_dsn_option_but_a_few_harmless_ones_is_dropped(dsn, shape):
    assert document.dsn_shape(dsn) == shape


def test_a_recorded_command_never_keeps_an_ssl_password():
    command = document.reproducing_command(
        ["run", "tpcb", "--dsn", "postgresql://bob@db/x?sslpassword=k3y%2Fpass&sslmode=verify-ca"]
    )
    assert "sslpassword" not in command and "k3y" not in command
    assert "sslmode=verify-ca" in command


@pytest.mark.parametrize(
    "path",
    ["/srv/fb data/ag field 2.fdb", "/var/lib/firebird/3.0/data/orders 2024 (copy).fdb"],
)
def test_a_firebird_path_with_spaces_is_redacted_whole(path):
    doc = example()
    doc["source"]["command"] = document.reproducing_command(
        [
            "run",
            "backup",
            "--dsn",
            f"firebird://SYSDBA:Pw9x@localhost:3050/{path}",
            "--rows",
            "1000",
        ]
    )
    clean, findings = redacted(doc)
    assert clean["source"]["command"] == (
        "benchhub-agent run backup --dsn 'firebird://USER:***@HOST:3050/FILE_ON_EXT4' --rows 1000"
    )
    assert [f.kind for f in findings] == ["database_path"]
    sent = json.dumps(clean)
    assert "field" not in sent and "orders" not in sent and "copy" not in sent


def test_a_real_firebird_file_with_spaces_is_named_by_its_real_filesystem(tmp_path):
    database = tmp_path / "fb data" / "ag field 2.fdb"
    database.parent.mkdir()
    database.write_bytes(b"")
    doc = example()
    doc["source"]["command"] = document.reproducing_command(
        ["run", "backup", "--dsn", f"firebird://SYSDBA@localhost:3050/{database}"]
    )
    clean, _ = redact(doc, ALICE)  # this machine's own mount table
    command = clean["source"]["command"]
    assert re.fullmatch(
        r"benchhub-agent run backup --dsn firebird://USER@HOST:3050/FILE_ON_[A-Z0-9_]+", command
    ), command
    assert "field" not in command and "data" not in command


def test_a_quoted_firebird_path_with_a_space_in_a_text_is_redacted_to_the_quote():
    clean, _ = redacted(with_note("gbak -b 'firebird://SYSDBA@localhost//tmp/x/ag field.fdb' out"))
    assert clean["runs"][0]["note"] == "gbak -b 'firebird://SYSDBA@localhost/FILE_ON_EXT4' out"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("application_name=bob-laptop", "application_name=USER-laptop"),
        ("connected as bob_dev from a container", "connected as USER_dev from a container"),
        ("data in /srv/bob/pg15", "data in /srv/USER/pg15"),
        ("Bob.Smith's run", "USER.Smith's run"),
        ("ran on ws17 as bob", "ran on HOSTNAME as USER"),
    ],
)
def test_a_short_user_name_is_removed_inside_tokens_too(text, expected):
    clean, findings = redact(with_note(text), BOB, on_ext4)
    assert clean["runs"][0]["note"] == expected
    assert "user_name" in [f.kind for f in findings]


@pytest.mark.parametrize("text", ["bobcat and kabob", "the bobsleigh run", "bob2 is another login"])
def test_a_short_user_name_inside_a_longer_word_is_left(text):
    clean, findings = redact(with_note(text), BOB, on_ext4)
    assert clean["runs"][0]["note"] == text and findings == []


def test_a_user_named_like_a_catalog_word_leaves_the_catalog_fields_whole():
    doc = example()
    doc["runs"][0]["note"] = "started by update"
    clean, _ = redact(doc, Identity(host_names=(), user_names=("update",)), on_ext4)
    assert clean["runs"][0]["benchmark"] == doc["runs"][0]["benchmark"]
    assert clean["runs"][0]["note"] == "started by USER"
    document.validate(clean)


def test_a_real_run_by_a_short_named_user_records_neither_name_nor_dsn_secrets(outbox_dir):
    from _databases import PG_SERVER, database_name

    from conftest import _ensure

    dsn = _ensure(f"{PG_SERVER}/{database_name('bob_orders')}")
    done = subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", "run", "select-update", "--dsn",
         dsn + "?sslpassword=Zq8%21vault&application_name=bob-ws17&connect_timeout=9",
         "--clients", "1", "--transactions", "30", "--repeat", "1", "--dry-run"],
        capture_output=True, text=True, env={**os.environ, "USER": "bob", "LOGNAME": "bob"},
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout)
    command = sent["source"]["command"]
    assert "_USER_orders?connect_timeout=9' --clients 1 --transactions 30" in command
    assert "bob" not in json.dumps(sent) and "Zq8" not in json.dumps(sent)
    assert "redacted user_name at $.source.command: 'bob' → USER" in done.stderr
