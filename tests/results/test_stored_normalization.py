"""What an upload stores is normalized, whatever spelling the agent sent;
the raw text stays beside it."""

from __future__ import annotations

from benchhub.results.models import Hardware, Storage
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
