"""tpcc on the real Firebird 3: the run, --like, and a sabotaged transaction, on one load.

Loading a warehouse through firebird-driver takes one to three minutes on a busy 2-core
machine, so the module loads once (kept), and the tests use that data in order: the run
that loaded it, a --like repeat on it (--no-init), then a sabotaged run (--no-init), which
breaks it and comes last. The DSN's own database is the user's and keeps its rows.
"""

from __future__ import annotations

import json
import os

import _databases as dbs
import pytest
from benchhub_agent import firebird_isc
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import tpcc
from contract_server import ContractServer
from test_cli import agent
from test_firebird_load import own_file, users_database, users_rows
from test_like import published_run, serve
from test_tpcc import TPCC_RUN, assert_sensible, run_tpcc

pytestmark = pytest.mark.xdist_group("tpcc_firebird")  # one load, used in order


@pytest.fixture(scope="module")
def loaded():
    target = dbs.firebird("tpcc_fb")
    users = users_database(target)
    result = run_tpcc(target, keep=True)
    yield target, users, result
    dbc.remove_own_objects(target, tpcc.NAME, tpcc.OWN_TABLES)


def test_a_firebird_run_passes_the_consistency_check_in_its_own_file(loaded):
    target, users, result = loaded
    assert_sensible(result, [1, 2])
    assert result.database["engine"] == "firebird"
    assert {"ServerMode", "page_size", "page_buffers", "TempDirectories"} <= set(
        result.database["settings"]
    )
    assert result.client["driver"] == firebird_isc.DRIVER
    assert os.path.exists(own_file(target, tpcc.NAME))  # kept
    assert users_rows(users) == ["7", "24.50"]


def test_like_repeats_a_firebird_tpcc_run_on_the_kept_data(loaded, outbox_dir):
    target, users, _ = loaded
    published = {**TPCC_RUN, "seed": 7}  # the kept data's seed: --no-init reuses it
    run = published_run(
        "tpcc", published, server={"engine": "firebird"}, benchmark_version=tpcc.VERSION
    )
    with ContractServer() as server:
        url = serve(server, run)
        done = agent(
            "run", "--like", url, "--dsn", target.dsn, "--no-init", "--keep", "--dry-run"
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    repeated = json.loads(done.stdout)["runs"][0]
    assert repeated["benchmark"] == "tpcc"
    assert repeated["parameters"] == published
    assert users_rows(users) == ["7", "24.50"]


def test_a_sabotaged_transaction_on_firebird_fails_the_run_loudly(loaded):
    target, users, _ = loaded
    with pytest.raises(tpcc.ConsistencyFailed, match="1: warehouse 1: W_YTD"):
        run_tpcc(
            target,
            clients=[2],
            no_init=True,
            warehouses=None,
            seed=None,
            test_sabotage="payment_skips_district",
        )
    assert users_rows(users) == ["7", "24.50"]
