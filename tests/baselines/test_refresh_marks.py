"""The refresh's bookkeeping of marks and claims, key by key: a round
clears only what it did, counts what is left, scores what it did not
change, and applies a rejection without a rebuild. (Written for the
mutants of baselines/refresh.py that mutation testing found alive;
docs/testing.md.)"""

from __future__ import annotations

import copy
import datetime as dt

from django.db.models import F
from django.utils import timezone

from benchhub.baselines import refresh
from benchhub.baselines.histogram import bucket_of
from benchhub.baselines.marking import baselines_mark_all, mark_keys
from benchhub.baselines.models import Baseline, CountedRun, DirtyKey, DirtyRun
from benchhub.baselines.refresh import baselines_refresh
from benchhub.baselines.selectors import baseline_point
from benchhub.baselines.services import baselines_mark_dirty
from benchhub.baselines.statistics import Summary, outlier_score
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

Status = Submission.Status


def publish(user, *values: float, status=Status.APPROVED, rows: int = 100) -> Submission:
    """One submission with a run per value (their clients=20 measurement);
    ``rows`` (a run parameter) picks the comparability key."""
    document = small_document()
    template = document["runs"][0]
    document["runs"] = []
    for value in values:
        run = copy.deepcopy(template)
        run["parameters"] = {**run["parameters"], "rows": rows}
        run["measurements"][1]["value"] = value
        document["runs"].append(run)
    return submission_create(submitter=user, document=document, status=status).submission


def two_keys(user, status=Status.APPROVED) -> tuple[str, str]:
    """One submission whose runs fall in two keys, marked in one statement
    (one timestamp): the first key one run, the second two."""
    document = small_document()
    first = document["runs"][0]
    document["runs"] = []
    for rows, value in ((100, 1000.0), (200, 2000.0), (200, 2600.0)):
        run = copy.deepcopy(first)
        run["parameters"] = {**run["parameters"], "rows": rows}
        run["measurements"][1]["value"] = value
        document["runs"].append(run)
    submission = submission_create(submitter=user, document=document, status=status).submission
    keys = {rows: fp for rows, fp in _keys_by_rows(submission)}
    return keys[100], keys[200]


def _keys_by_rows(submission: Submission):
    for run in Run.objects.filter(submission=submission):
        yield run.parameters["rows"], run.fingerprint


def clients_20(fingerprint: str) -> Baseline:
    return Baseline.objects.get(fingerprint=fingerprint, parameters={"clients": 20})


def test_a_pending_upload_is_scored_against_the_approved_baseline_in_its_round(bob, alice):
    publish(bob, 1000.0, 1010.0, 990.0, 1005.0, 2000.0)
    baselines_refresh()
    suspect = publish(alice, 5000.0, status=Status.PENDING)

    assert baselines_refresh() == (1, 0)

    baseline = clients_20(Run.objects.get(submission=suspect).fingerprint)
    assert baseline.n == 5  # not counted: pending
    summary = Summary(
        baseline.n, baseline.median, baseline.q1, baseline.q3, baseline.minimum,
        baseline.maximum, baseline.mad,
    )  # fmt: skip
    measurement = Measurement.objects.get(run__submission=suspect, parameters={"clients": 20})
    assert measurement.outlier_score is not None
    assert measurement.outlier_score == outlier_score(5000.0, summary)


def test_a_round_of_one_key_clears_only_that_keys_run_marks(bob):
    first, second = two_keys(bob)
    assert DirtyRun.objects.count() == 3

    assert baselines_refresh(limit=1) == (1, 1)

    # whichever key went first, the other's run marks are all still there
    left = DirtyRun.objects.values_list("fingerprint", flat=True)
    assert len(left) in (1, 2) and len(set(left)) == 1
    assert baselines_refresh(limit=1) == (1, 0)
    assert clients_20(first).n == 1
    assert (clients_20(second).n, clients_20(second).maximum) == (2, 2600.0)


def test_a_rebuild_of_one_key_clears_only_that_keys_run_marks(bob):
    first, second = two_keys(bob)
    # the first key is marked for a rebuild, and older: it goes first
    mark_keys([first], timezone.now(), rebuild=True)
    DirtyKey.objects.filter(fingerprint=first).update(marked_at=F("marked_at") - dt.timedelta(1))

    assert baselines_refresh(limit=1) == (1, 1)

    assert sorted(DirtyRun.objects.values_list("fingerprint", flat=True)) == [second, second]
    baselines_refresh()
    assert (clients_20(first).n, clients_20(second).n) == (1, 2)


def test_every_key_done_in_a_round_is_unmarked(bob):
    two_keys(bob)

    assert baselines_refresh() == (2, 0)

    assert not DirtyKey.objects.exists() and not DirtyRun.objects.exists()


def test_a_key_with_runs_left_stays_marked_beside_one_done(bob):
    _, second = two_keys(bob)

    # one dirty run per key and round: the second key has one left
    assert baselines_refresh(runs=1) == (2, 1)

    assert list(DirtyKey.objects.values_list("fingerprint", "claimed_at")) == [(second, None)]
    assert baselines_refresh(runs=1) == (1, 0)
    assert not DirtyKey.objects.exists()
    assert clients_20(second).n == 2


def test_a_key_marked_again_while_claimed_stays_marked_without_new_runs(bob):
    (key,) = {run.fingerprint for run in Run.objects.filter(submission=publish(bob, 1000.0))}
    claimed = refresh._claim(10)
    mark_keys([key], timezone.now() + dt.timedelta(seconds=1))  # an alias rule changed, say

    refresh._apply(key, refresh.RUNS_PER_ROUND)
    refresh._finish(claimed)

    (mark,) = DirtyKey.objects.all()
    assert (mark.fingerprint, mark.claimed_at) == (key, None)


def test_a_round_takes_at_most_its_limit_of_keys_and_counts_the_rest_rebuilds_included(bob):
    two_keys(bob)
    baselines_refresh()
    assert baselines_mark_all() == 2

    assert baselines_refresh(limit=1) == (1, 1)
    assert baselines_refresh(limit=1, rebuild=False) == (0, 0)  # a request's round
    assert baselines_refresh(limit=1) == (1, 0)


def test_the_nightly_marks_are_one_statement_for_a_few_keys(bob, django_assert_max_num_queries):
    two_keys(bob)
    publish(bob, 1000.0, rows=300)

    with django_assert_max_num_queries(2):  # the keys, then one upsert of their marks
        assert baselines_mark_all() == 3


def test_a_rejection_is_applied_in_its_round_without_a_rebuild(bob, alice):
    publish(alice, 1.0, status=Status.PENDING)  # run ids and counted-run ids differ
    publish(bob, 1000.0, 1100.0)
    flagged = publish(alice, 7000.0)
    baselines_refresh()
    (key,) = set(Run.objects.values_list("fingerprint", flat=True))
    assert clients_20(key).n == 3

    submission_moderate(submission=flagged, actor=None, action="flag", reason="too fast")

    assert baselines_refresh(rebuild=False) == (1, 0)  # as a request would run it
    assert (clients_20(key).n, clients_20(key).maximum) == (2, 1100.0)
    assert not DirtyKey.objects.exists()
    assert CountedRun.objects.count() == 2


def test_keys_marked_by_name_are_marked_once_each_with_the_time(db):
    # an alias rule renormalized some runs' dimensions: their keys, by name
    before = timezone.now()
    baselines_mark_dirty(fingerprints=["b" * 64, "a" * 64, "b" * 64])

    marks = list(
        DirtyKey.objects.order_by("fingerprint").values_list(
            "fingerprint", "marked_at", "rebuild_at"
        )
    )
    assert [key for key, _, _ in marks] == ["a" * 64, "b" * 64]
    assert all(marked >= before for _, marked, _ in marks)
    assert [rebuild for _, _, rebuild in marks] == [None, None]  # updated, not rebuilt
    assert not DirtyRun.objects.exists()


def test_a_rebuild_asked_again_while_one_runs_stays_asked(bob):
    (key,) = {run.fingerprint for run in Run.objects.filter(submission=publish(bob, 1000.0))}
    mark_keys([key], timezone.now(), rebuild=True)
    claimed = refresh._claim(10)
    # a counted run deleted outright meanwhile, say: rebuild once more
    mark_keys([key], timezone.now() + dt.timedelta(seconds=1), rebuild=True)

    refresh._rebuild(key)
    refresh._finish(claimed)

    (mark,) = DirtyKey.objects.all()
    assert (mark.fingerprint, mark.claimed_at) == (key, None)
    assert mark.rebuild_at is not None


def test_a_round_spells_each_distinct_point_once_whatever_its_runs(bob, monkeypatch):
    spelled = []

    def counting_point(parameters: dict) -> str:
        spelled.append(parameters)
        return baseline_point(parameters)

    monkeypatch.setattr(refresh, "baseline_point", counting_point)
    publish(bob, 1000.0, 1010.0, 990.0, 1005.0)

    assert baselines_refresh() == (1, 0)

    # four runs of the same two points (clients 1 and 20): two spellings
    assert sorted(p["clients"] for p in spelled) == [1, 20]
    baseline = Baseline.objects.get(parameters={"clients": 20})
    assert (baseline.n, baseline.median) == (4, 1002.5)


def test_a_round_of_pending_runs_puts_no_value_in_a_bucket(bob, alice, monkeypatch):
    publish(bob, 1000.0, 1010.0, 990.0, 1005.0, 2000.0)
    baselines_refresh()
    bucketed = []

    def counting_bucket(value: float) -> float | None:
        bucketed.append(value)
        return bucket_of(value)

    monkeypatch.setattr(refresh, "bucket_of", counting_bucket)
    publish(alice, 5000.0, 5100.0, status=Status.PENDING)

    assert baselines_refresh() == (1, 0)

    assert bucketed == []
    assert Measurement.objects.filter(value=5000.0, outlier_score__isnull=False).count() == 1


def test_a_rounds_run_marks_go_in_one_statement_but_those_marked_again(
    db, django_assert_max_num_queries
):
    then = timezone.now()
    later = then + dt.timedelta(seconds=1)
    DirtyRun.objects.bulk_create(
        DirtyRun(run_id=i, fingerprint="k", marked_at=later if i == 7 else then) for i in range(600)
    )

    with django_assert_max_num_queries(1):
        refresh._unmark([(i, then) for i in range(600)])

    assert list(DirtyRun.objects.values_list("run_id", "marked_at")) == [(7, later)]
