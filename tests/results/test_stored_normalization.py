"""What an upload stores is normalized, whatever spelling the agent sent;
the raw text stays beside it."""

from __future__ import annotations

import importlib

from django.apps import apps
from django.db import connection

from benchhub.results.models import Hardware, Storage, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document


def test_virtualization_and_io_scheduler_are_stored_canonical_beside_the_raw_text(bob):
    document = small_document(
        hardware={"cpu": "AMD EPYC 7B13", "cores": 2, "virtualization": "  QEMU "},
        storage={"filesystem": "ext4", "kind": "ssd", "io_scheduler": "none [MQ-Deadline] kyber"},
    )

    run = submission_create(submitter=bob, document=document).submission.runs.get()

    hardware = Hardware.objects.get(pk=run.hardware_id)
    storage = Storage.objects.get(pk=run.storage_id)
    assert (hardware.virtualization, hardware.virtualization_raw) == ("kvm", "  QEMU ")
    assert (storage.io_scheduler, storage.io_scheduler_raw) == (
        "mq-deadline",
        "none [MQ-Deadline] kyber",
    )


def test_a_filter_finds_what_a_non_canonical_spelling_stored(anonymous_api, bob):
    from benchhub.results.models import Submission

    document = small_document(
        hardware={"cpu": "Intel Xeon", "cores": 4, "virtualization": "Microsoft"},
        storage={"filesystem": "xfs", "io_scheduler": "[BFQ] none"},
    )
    submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    found = anonymous_api.get(
        "/api/v1/runs/", {"virtualization": "hyperv", "io_scheduler": "bfq"}
    ).json()

    assert len(found["results"]) == 1


ADMINISTRATIVE = ["rw", "resuid=65534", "resgid=65534", "resv_strict", "errors=remount-ro"]


def _series(client, **filters) -> list[str]:
    query = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
    answer = client.get("/api/v1/comparisons/", {**query, "series": "mount_options", **filters})
    assert answer.status_code == 200, answer.content
    return [series["label"] for series in answer.json()["series"]]


def _approved_upload(user, mount_options: list[str]) -> Storage:
    document = small_document(storage={"filesystem": "ext4", "mount_options": mount_options})
    submission = submission_create(
        submitter=user, document=document, status=Submission.Status.APPROVED
    ).submission
    return Storage.objects.get(pk=submission.runs.get().storage_id)


def test_options_irrelevant_to_performance_do_not_split_a_series(anonymous_api, alice, bob):
    """ "discard,noatime,resuid=…,rw" and "discard,noatime" were two series
    of one mount-option set; the raw text keeps what the machine said."""
    with_them = _approved_upload(alice, ["noatime", "discard", *ADMINISTRATIVE])
    _approved_upload(bob, ["discard", "noatime"])

    assert _series(anonymous_api) == ["discard,noatime"]
    assert with_them.mount_options_raw == ",".join(["noatime", "discard", *ADMINISTRATIVE])


def test_stored_rows_join_the_series_once_migrated(anonymous_api, alice, bob):
    stored_before = _approved_upload(alice, ["noatime", *ADMINISTRATIVE])
    # as normalization stored it before it left these options out
    Storage.objects.filter(pk=stored_before.pk).update(
        mount_options="errors=remount-ro,noatime,resgid=65534,resuid=65534,resv_strict,rw"
    )
    _approved_upload(bob, ["noatime"])
    assert len(_series(anonymous_api)) == 2

    migration = importlib.import_module(
        "benchhub.results.migrations.0010_mount_options_without_irrelevant"
    )
    with connection.schema_editor() as editor:
        migration.normalize_stored_mount_options(apps, editor)

    assert _series(anonymous_api) == ["noatime"]


def test_a_one_option_filter_on_an_irrelevant_option_is_a_400(anonymous_api, db):
    """mount_option=rw normalized to nothing, and found the runs mounted
    without options."""
    answer = anonymous_api.get("/api/v1/runs/", {"mount_option": "rw"})

    assert answer.status_code == 400
    assert "'rw' does not affect performance" in answer.json()["error"]["message"]
