"""What the tests of kept comparison answers (test_kept_answers_*.py)
share: the query they ask, an upload, the API's answer and whether it was
computed, a cell of it, the kept keys in Redis, and the changes more than
one file makes. Their fixtures are in conftest.py."""

from __future__ import annotations

from django.core.cache import cache, caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.comparisons import services
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

URL = "/api/v1/comparisons/"
QUERY = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "filesystem",
}


def upload(user, filesystem: str, scale: float, status=Submission.Status.APPROVED) -> Submission:
    # Skewed values, one point measured by some runs only.
    values = {1: 101.0 * scale, 4: 377.5 * scale**2, 16: 910.25 * scale**0.5}
    if scale > 1:
        values[64] = 1333.0 * scale
    document = sweep_document(values, storage={"filesystem": filesystem})
    return submission_create(submitter=user, document=document, status=status).submission


def _kept_keys(kind: str = "answer") -> list[bytes]:
    kept_cache = caches["kept"]
    client = kept_cache._cache.get_client(write=True)
    return list(client.scan_iter(match=f"{kept_cache.key_prefix}:*:{kind}:*"))


def _refresh_window_over() -> None:
    """The approved uploads of a fixture queued a refresh (services.py):
    the burst's window is over, the test's own changes queue their own."""
    cache.delete(services._QUEUED)


def answer(client, query=QUERY) -> tuple[dict, bool]:
    """The API's answer, and whether the cells were computed for it."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(URL, query)
    assert response.status_code == 200, response.content[:300]
    computed = any("percentile_cont" in q["sql"] for q in queries.captured_queries)
    return response.json(), computed


def cell(data: dict, series: str, x: int) -> dict | None:
    for entry in data["series"]:
        if entry["label"] == series:
            return next((p for p in entry["points"] if p["x"] == x), None)
    return None


def _approve_pending(ctx):
    pending = upload(ctx["bob"], "btrfs", 1.5, status=Submission.Status.PENDING)
    submission_moderate(submission=pending, actor=ctx["moderator"], action="approve")


def _hide_approved(ctx):
    submission_moderate(submission=ctx["zfs"], actor=ctx["moderator"], action="hide", reason="r")


def _saved_each(rows, **values) -> None:
    """As the admin or a shell edits rows: one save() each."""
    for row in rows:
        for name, value in values.items():
            setattr(row, name, value)
        row.save()


def zfs_cell(data):
    return cell(data, "zfs", 1)
