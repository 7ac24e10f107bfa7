"""Reads of the imports app."""

from __future__ import annotations

from django.db.models import Prefetch

from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.selectors import RUN_RELATED, User, submission_list


def imported_submission_get(*, user: User, uuid) -> Submission | None:
    """A submission the user may see, with its runs, their environment and
    measurements, in a fixed number of queries whatever its size."""
    runs = Run.objects.select_related(*(name for name in RUN_RELATED if name != "submission"))
    measurements = Measurement.objects.select_related("metric").order_by("id")
    return (
        submission_list(user=user)
        .filter(uuid=uuid)
        .prefetch_related(
            Prefetch("runs", queryset=runs.order_by("position")),
            Prefetch("runs__measurements", queryset=measurements),
        )
        .first()
    )
