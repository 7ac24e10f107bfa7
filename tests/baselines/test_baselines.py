import time

import pytest
from django.utils import timezone

from benchhub.baselines import refresh as services
from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.refresh import baselines_refresh
from benchhub.celery import app
from benchhub.results.models import Measurement, Submission
from benchhub.results.services import submission_create
from tests.baselines import baselines_callbacks
from tests.factories import small_document
from tests.workers import in_process_worker


def publish(user, throughput_at_20: float, status=Submission.Status.APPROVED) -> Submission:
    document = small_document()
    document["runs"][0]["measurements"][1]["value"] = throughput_at_20
    return submission_create(submitter=user, document=document, status=status).submission


def test_refresh_summarizes_approved_results_per_point(bob, alice):
    for value in (1000.0, 1100.0, 1200.0, 1300.0, 1400.0):
        publish(bob, value)
    publish(alice, 9999.0, status=Submission.Status.PENDING)

    done, remaining = baselines_refresh()

    assert (done, remaining) == (1, 0)
    baseline = Baseline.objects.get(metric__name="throughput", parameters={"clients": 20})
    assert (baseline.n, baseline.median, baseline.minimum, baseline.maximum) == (
        5,
        1200.0,
        1000.0,
        1400.0,
    )
    assert sorted(baseline.buckets.values_list("value", "count")) == [
        (1000.0, 1),
        (1100.0, 1),
        (1200.0, 1),
        (1300.0, 1),
        (1400.0, 1),
    ]
    # The pending result is left out of the baseline but scored against it.
    pending = Measurement.objects.get(run__submission__status="pending", parameters={"clients": 20})
    assert pending.outlier_score == pytest.approx(0.6745 * (9999 - 1200) / 100)


def test_a_new_upload_marks_its_key_dirty(bob):
    publish(bob, 1000.0)

    assert DirtyKey.objects.count() == 1
    baselines_refresh()
    assert DirtyKey.objects.count() == 0


def test_only_a_new_mark_queues_a_refresh(bob, django_capture_on_commit_callbacks):
    """A key already marked is on its way to a task: one upload after
    another to the same key must not queue one recompute each."""
    with django_capture_on_commit_callbacks() as first:
        publish(bob, 1000.0)
    with django_capture_on_commit_callbacks() as second:
        publish(bob, 1100.0)

    assert len(baselines_callbacks(first)) == 1
    assert baselines_callbacks(second) == []
    assert DirtyKey.objects.count() == 1


def test_a_key_marked_again_during_its_refresh_stays_dirty_and_is_released(bob):
    publish(bob, 1000.0)
    claimed = services._claim(limit=10)
    publish(bob, 1100.0)  # arrives while the worker computes

    services._finish(claimed)

    (mark,) = DirtyKey.objects.all()
    assert mark.claimed_at is None  # the next round takes it
    assert baselines_refresh() == (1, 0)
    assert Baseline.objects.get(parameters={"clients": 20}).n == 2


def test_a_claimed_key_is_left_to_its_worker_until_the_claim_expires(bob):
    publish(bob, 1000.0)
    services._claim(limit=10)

    assert baselines_refresh() == (0, 0)  # held by another worker

    DirtyKey.objects.update(claimed_at=timezone.now() - services.CLAIM_EXPIRY * 2)
    assert baselines_refresh() == (1, 0)  # that worker died: taken over


def test_rank_api_places_a_value_among_approved_results(anonymous_api, bob, settings):
    settings.RANK_MIN_RESULTS = 4  # the arithmetic of a rank, among these four
    submissions = [publish(bob, v) for v in (1000.0, 1100.0, 1200.0, 1300.0)]
    baselines_refresh()
    fingerprint = submissions[0].runs.get().fingerprint

    rank = anonymous_api.get(
        "/api/v1/baselines/rank/",
        {"fingerprint": fingerprint, "metric": "throughput", "value": 1250, "param.clients": 20},
    ).json()
    listing = anonymous_api.get("/api/v1/baselines/", {"fingerprint": fingerprint}).json()

    assert rank == {
        "n": 4,
        "percentile": 75.0,
        "unranked": "",
        "direction": "higher",
        "median": 1150.0,
        "value": 1250.0,
    }
    assert {(b["metric"], b["parameters"]["clients"], b["n"]) for b in listing["results"]} == {
        ("throughput", 1, 4),
        ("throughput", 20, 4),
    }


def test_rank_api_errors_name_the_parameter(anonymous_api, db):
    missing = anonymous_api.get("/api/v1/baselines/rank/", {"metric": "throughput"})
    assert missing.status_code == 400
    assert missing.json()["error"]["details"][0]["path"] == "$.fingerprint"

    unknown = anonymous_api.get(
        "/api/v1/baselines/rank/", {"fingerprint": "0" * 64, "metric": "tps", "value": "1"}
    )
    assert unknown.status_code == 404
    assert "No baseline yet" in unknown.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "rest"),
    [("/api/v1/baselines/", {}), ("/api/v1/baselines/rank/", {"metric": "tps", "value": "1"})],
)
def test_a_malformed_fingerprint_is_called_malformed_not_missing(anonymous_api, db, path, rest):
    """fingerprint=abc was answered "required", to a client that had sent one."""
    response = anonymous_api.get(path, {"fingerprint": "abc", **rest})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("fingerprint: malformed, 'abc' (3 characters) is not one")
    assert "64 hex digits" in error["message"]
    assert "required" not in error["message"]
    assert error["details"] == [
        {"path": "$.fingerprint", "message": error["details"][0]["message"]}
    ]


def test_a_malformed_value_is_called_malformed_not_missing(anonymous_api, db):
    query = {"fingerprint": "0" * 64, "metric": "tps"}

    malformed = anonymous_api.get("/api/v1/baselines/rank/", {**query, "value": "fast"})
    missing = anonymous_api.get("/api/v1/baselines/rank/", query)

    assert "value: malformed, 'fast'" in malformed.json()["error"]["message"]
    assert missing.json()["error"]["message"].startswith("value: required")


@pytest.mark.parametrize("metric", [None, "", "  "])
def test_a_rank_without_a_metric_says_it_is_required(anonymous_api, db, metric):
    """It answered 404 "No baseline yet for metric ''", as if one had been asked for."""
    query = {"fingerprint": "0" * 64, "value": "1"}
    if metric is not None:
        query["metric"] = metric

    response = anonymous_api.get("/api/v1/baselines/rank/", query)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("metric: required; a metric is named as the catalog")
    assert [detail["path"] for detail in error["details"]] == ["$.metric"]
    assert error["details"][0]["message"].startswith("required")


def test_an_upper_case_fingerprint_is_the_same_key(anonymous_api, db):
    response = anonymous_api.get("/api/v1/baselines/", {"fingerprint": "AB" * 32})

    assert response.status_code == 200


def test_a_parameter_the_baseline_endpoints_do_not_take_is_named_not_ignored(anonymous_api, db):
    """The list answered every metric whatever metric= asked; the rank took
    clients=20 (no param.) for no parameters at all."""
    fingerprint = "0" * 64

    listing = anonymous_api.get(
        "/api/v1/baselines/", {"fingerprint": fingerprint, "metric": "throughput"}
    )
    rank = anonymous_api.get(
        "/api/v1/baselines/rank/",
        {"fingerprint": fingerprint, "metric": "tps", "value": "1", "clients": "20"},
    )

    assert listing.status_code == 400
    assert listing.json()["error"]["details"] == [
        {"path": "$.metric", "message": "unknown parameter"}
    ]
    assert rank.status_code == 400
    assert "clients" in rank.json()["error"]["message"]
    assert "param.<name>" in rank.json()["error"]["message"]
    assert anonymous_api.get("/api/v1/baselines/", {"fingerprint": fingerprint}).status_code == 200


def test_the_baseline_endpoints_take_the_format_override_the_api_is_set_with(
    anonymous_api, db, settings
):
    """They took the literal "format" whatever URL_FORMAT_OVERRIDE said,
    where the lists read the setting (benchhub.lib.ordering)."""
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {"URL_FORMAT_OVERRIDE": "as"}
    query = {"fingerprint": "0" * 64}

    renamed = anonymous_api.get("/api/v1/baselines/", query | {"as": "json"})
    literal = anonymous_api.get("/api/v1/baselines/", query | {"format": "json"})

    assert renamed.status_code == 200, renamed.content
    assert literal.status_code == 400
    assert literal.json()["error"]["message"] == (
        "unknown parameter: format; this endpoint takes fingerprint"
    )


@pytest.mark.parametrize(
    ("name", "value", "path"),
    [
        ("metric", "through\x00put", "$.metric"),  # was a 500: the lookup failed in PostgreSQL
        ("param.clients", "2\x000", "$.param.clients"),  # was a 404 for a point of "2\x000"
        ("param.cli\x00ents", "20", "$.param.cli\x00ents"),
    ],
)
def test_a_null_character_in_a_rank_parameter_is_a_400_naming_it(
    anonymous_api, db, name, value, path
):
    query = {"fingerprint": "0" * 64, "metric": "throughput", "value": "1", name: value}

    rank = anonymous_api.get("/api/v1/baselines/rank/", query)

    assert rank.status_code == 400
    assert rank.json()["error"]["code"] == "invalid"
    assert rank.json()["error"]["details"] == [
        {"path": path, "message": "a null character is not allowed"}
    ]


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_on_redis_computes_baselines_after_upload(bob):
    """The upload queues the refresh on commit; a Celery worker consuming
    the real Redis broker computes it."""
    app.control.purge()
    for value in (1000.0, 1200.0, 1400.0):
        publish(bob, value)
    assert Baseline.objects.count() == 0  # nothing computed in the request

    with in_process_worker():
        deadline = time.monotonic() + 30
        while DirtyKey.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    assert not DirtyKey.objects.exists()
    baseline = Baseline.objects.get(metric__name="throughput", parameters={"clients": 20})
    assert (baseline.n, baseline.median) == (3, 1200.0)


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_refreshes_every_marked_key_of_a_burst_and_a_rebuild(bob):
    """Uploads to seven keys while a worker runs, then one key marked for a
    rebuild: every mark is taken, every key has its baselines, with no
    later write to push them."""
    from benchhub.results.models import Run

    app.control.purge()
    with in_process_worker():
        for rows in (1100, 1300, 1700, 2300, 2900, 3100, 3700):
            document = small_document()
            document["runs"][0]["parameters"]["rows"] = rows
            submission_create(submitter=bob, document=document, status="approved")
        deadline = time.monotonic() + 60
        while DirtyKey.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        key = Run.objects.order_by("id").values_list("fingerprint", flat=True).first()
        Baseline.objects.filter(fingerprint=key).delete()
        services.mark_keys([key], timezone.now(), rebuild=True)
        from benchhub.baselines.services import _queue_refresh

        _queue_refresh()
        deadline = time.monotonic() + 60
        while DirtyKey.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    keys = set(Run.objects.values_list("fingerprint", flat=True))
    assert len(keys) == 7
    assert not DirtyKey.objects.exists()
    assert keys == set(Baseline.objects.values_list("fingerprint", flat=True))
