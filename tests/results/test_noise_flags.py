"""Noise flags: computed once when a run is stored, shown with the run,
filterable, and left out of verdicts on request."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from benchhub.results.models import Run, Submission
from benchhub.results.noise import coefficient_of_variation, run_noise
from benchhub.results.services import submission_create
from tests.factories import sweep_document


def test_a_steady_run_of_five_repetitions_is_quiet():
    noise = run_noise(repetitions=5, samples=[[100, 101, 99, 100, 100.5], [50, 50.5, 49.8]])
    assert (noise.flags, noise.stored) == ((), "")
    assert noise.cv == pytest.approx((0.7416 / 100.1 + 0.36056 / 50.1) / 2, rel=1e-4)


def test_noisy_is_the_median_cv_above_five_percent_not_one_unsteady_point():
    steady, unsteady = [100, 101, 99], [50, 80, 65]
    assert run_noise(repetitions=3, samples=[steady, steady, unsteady]).flags == ()
    assert run_noise(repetitions=3, samples=[unsteady, unsteady, steady]).flags == ("noisy",)
    # 5 % itself is not above 5 %: sd 5 around a mean of 100.
    assert run_noise(repetitions=3, samples=[[95, 100, 105]]).flags == ()


def test_unrepeated_counts_the_samples_when_the_run_says_less():
    assert run_noise(repetitions=None, samples=[[]]).flags == ("unrepeated",)
    assert run_noise(repetitions=2, samples=[[1.0, 1.0]]).flags == ("unrepeated",)
    assert run_noise(repetitions=None, samples=[[1.0, 1.0, 1.0]]).flags == ()


def test_the_repetitions_counted_are_the_runs_or_its_longest_samples():
    assert run_noise(repetitions=None, samples=[[]]).repetitions == 1
    assert run_noise(repetitions=2, samples=[[1.0, 2.0, 3.0, 4.0], [1.0]]).repetitions == 4
    assert run_noise(repetitions=6, samples=[[1.0, 2.0]]).repetitions == 6


def test_client_bound_when_the_load_engine_reports_its_cpu_saturated():
    samples = [[1.0, 1.0, 1.0]]
    assert run_noise(repetitions=3, samples=samples, load_engine_cpu=94.9).flags == ()
    flags = run_noise(repetitions=1, samples=samples, load_engine_cpu=99).stored
    assert flags == "client-bound"
    assert run_noise(repetitions=1, samples=[[1, 2]], load_engine_cpu=100).stored == (
        "client-bound,noisy,unrepeated"
    )


def upload(user, samples, *, repetitions=None, load_engine_cpu=None, filesystem="ext4"):
    document = sweep_document(
        {1: sorted(samples)[len(samples) // 2]}, storage={"filesystem": filesystem}
    )
    run = document["runs"][0]
    run["measurements"][0]["samples"] = samples
    if repetitions is None:
        run.pop("repetitions", None)
    else:
        run["repetitions"] = repetitions
    if load_engine_cpu is not None:
        run["load_engine_cpu"] = load_engine_cpu
    return submission_create(
        submitter=user, document=document, status=Submission.Status.APPROVED
    ).submission.runs.get()


def test_an_upload_stores_its_flags_and_the_api_shows_and_filters_them(anonymous_api, bob):
    quiet = upload(bob, [100.0, 100.5, 99.5])
    noisy = upload(bob, [80.0, 100.0, 130.0], repetitions=3)
    bound = upload(bob, [100.0, 100.5, 99.5], repetitions=3, load_engine_cpu=98.5)
    single = upload(bob, [100.0])

    assert Run.objects.get(pk=noisy.pk).noise == "noisy"
    run = anonymous_api.get(f"/api/v1/runs/{bound.pk}/").json()
    assert (run["noise"], run["load_engine_cpu"]) == (["client-bound"], 98.5)

    def ids(query: dict) -> set[int]:
        response = anonymous_api.get("/api/v1/runs/", query)
        assert response.status_code == 200, response.json()
        return {r["id"] for r in response.json()["results"]}

    assert ids({"noise": "quiet"}) == {quiet.pk}
    assert ids({"noise": "noisy"}) == {noisy.pk}
    assert ids({"noise": "unrepeated"}) == {single.pk}
    assert ids({"noise": "client-bound"}) == {bound.pk}
    measured = anonymous_api.get("/api/v1/measurements/", {"noise": "quiet"}).json()
    assert [(m["run"], m["run_noise"]) for m in measured["results"]] == [(quiet.pk, [])]


def test_an_unknown_noise_value_is_a_400_naming_the_choices(anonymous_api, db):
    response = anonymous_api.get("/api/v1/runs/", {"noise": "loud"})
    assert response.status_code == 400
    assert "quiet" in response.json()["error"]["message"]


def test_verdicts_quiet_leaves_noisy_runs_out_of_the_verdict_only(anonymous_api, bob):
    for value in (100.0, 101.0, 99.0, 100.5):
        upload(bob, [value, value, value])
        upload(bob, [value * 1.3] * 3, filesystem="xfs")
    # Four wildly noisy xfs runs far below: with them the sides overlap.
    for value in (40.0, 45.0, 50.0, 60.0):
        upload(bob, [value * 0.5, value, value * 1.5], filesystem="xfs")
    query = {
        "benchmark": "select-update",
        "metric": "throughput",
        "x": "param.clients",
        "series": "filesystem",
        "reference": "ext4",
    }

    every_run = anonymous_api.get("/api/v1/comparisons/", query).json()
    quiet = anonymous_api.get("/api/v1/comparisons/", {**query, "verdicts": "quiet"}).json()

    assert every_run["series"][1]["points"][0]["verdict"]["verdict"] == "inconclusive"
    assert quiet["series"][1]["points"][0]["verdict"]["verdict"] == "better"
    assert quiet["series"][1]["points"][0]["n"] == 8  # the median still counts every run


def test_the_coefficient_of_variation_is_statistics_own_to_the_last_digits():
    # Floats instead of statistics' exact fractions (a tenth of an upload's
    # CPU): the same answer on skewed, huge, tiny, subnormal and mixed-sign
    # repetitions, where squaring 1e-300 or 1e18 would leave a double.
    rng = random.Random(7)
    kinds = [
        lambda: rng.uniform(0, 1e18),
        lambda: rng.uniform(1e-300, 1e-290),
        lambda: rng.lognormvariate(5, 1.5),
        lambda: 5e-324,
        lambda: 0.0,
        lambda: -rng.uniform(0, 1e18),
    ]
    checked = 0
    for _ in range(5000):
        values = [rng.choice(kinds)() for _ in range(rng.randint(2, 9))]
        mean = statistics.fmean(values)
        if not mean:
            assert coefficient_of_variation(values) is None
            continue
        try:
            expected = statistics.stdev(values) / abs(mean)
        except OverflowError:  # beyond a double either way
            continue
        assert coefficient_of_variation(values) == pytest.approx(expected, rel=1e-12), values
        checked += 1
    assert checked > 4000
    assert coefficient_of_variation([5.0]) is None
    assert coefficient_of_variation([90.0, 110.0]) == pytest.approx(math.sqrt(200) / 100)
