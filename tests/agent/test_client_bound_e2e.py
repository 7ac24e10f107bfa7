"""The load engine's own CPU, from the agent's meter to the server's client-bound flag.

The agent's tpcb engine runs for real against PostgreSQL and its document goes to the
live server through the agent's upload: the server keeps the run's ``load_engine_cpu`` and
flags the run client-bound exactly when it is 95 or more. Then the same document carries
what the same meter reads on a thread that never waits (a saturated engine, whatever else
the machine is doing, since waiting for a CPU counts as busy), and the server flags it.

A real engine starved of CPU (pinned beside busy loops at nice 19) read 85-94 %, not 95:
the scheduler serves a sleeping task's wake-ups promptly whatever its nice value, so the
database's latency still shows as idle time. That is why the saturated reading comes from
a thread that never sleeps, measured by the same code.
"""

from __future__ import annotations

import argparse
import copy
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Run
from benchhub.results.noise import CLIENT_BOUND
from tests.agent.databases import measured_database

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the scheduler's per-thread statistics are Linux's"
)


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    with measured_database("client_bound_e2e") as dsn:
        yield dsn


def saturated_share() -> float:
    """The meter on a thread that always has work for 0.3 s."""
    from benchhub_agent.benchmarks import _engine_cpu

    found: list[float] = []

    def spin() -> None:
        meter = _engine_cpu.ThreadMeter()
        deadline = time.perf_counter() + 0.3
        while time.perf_counter() < deadline:
            pass
        found.append(_engine_cpu.share(*meter.stop()))

    # Another thread of this process (the live server's) asking for the GIL would make the
    # spinner hand it over every 5 ms and wait, which the meter rightly reads as idle: CI
    # read 92 %. A switch interval longer than the spin keeps the GIL with the spinner.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        thread = threading.Thread(target=spin)
        thread.start()
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    return found[0]


@pytest.mark.django_db(transaction=True)
def test_the_engines_cpu_reaches_the_server_and_a_saturated_one_is_flagged(
    live_server, alice, bench_dsn
):
    from benchhub_agent import document, upload
    from benchhub_agent.benchmarks import tpcb
    from benchhub_agent.benchmarks.base import SilentProgress, Target

    options = argparse.Namespace(
        clients=[2], duration=1.0, warmup=0.2, repeat=1, scale=1, load_engine="agent",
        transactions=None, pin=None, keep=False,
    )  # fmt: skip
    result = tpcb.run(Target.parse(bench_dsn), options, SilentProgress())
    measured = document.agent_document(
        document_uuid=str(uuid.uuid4()),
        result=result,
        command="benchhub-agent run tpcb --clients 2 --duration 1",
        machine={},
    )
    saturated = copy.deepcopy(measured)
    saturated["uuid"] = str(uuid.uuid4())
    saturated["runs"][0]["load_engine_cpu"] = saturated_share()
    _, token = api_token_create(user=alice, name="agent")

    for doc in (measured, saturated):
        answer = upload.submit(live_server.url, token, doc, backoff=())
        assert answer.accepted, answer.describe()
        cpu = doc["runs"][0]["load_engine_cpu"]
        stored = Run.objects.get(submission__uuid=doc["uuid"])
        assert stored.load_engine_cpu == cpu
        assert (CLIENT_BOUND in stored.noise.split(",")) == (cpu >= 95), (cpu, stored.noise)
    assert saturated["runs"][0]["load_engine_cpu"] >= 95
    assert CLIENT_BOUND in Run.objects.get(submission__uuid=saturated["uuid"]).noise
