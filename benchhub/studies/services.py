"""Writing studies: a study is made of its owner's own submissions, and says
what varied among their runs; everything it claims is checked against them."""

from __future__ import annotations

import uuid as uuid_module
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from benchhub.comparisons.query import AXIS_DIMENSIONS
from benchhub.lib.api import FieldErrors
from benchhub.results.models import Metric, Run, Submission
from benchhub.studies.models import Study
from benchhub.studies.selectors import factor_value

MAX_SUBMISSIONS = 200
# Axes a study may vary: what a run ran on, not who sent it or its moderation.
VARIABLE = [name for name in AXIS_DIMENSIONS if name not in ("source", "status", "submitter")]


class InvalidStudy(FieldErrors):
    """A study whose claims its runs do not bear out."""


def _text(data: dict, key: str, limit: int, *, required: bool) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise InvalidStudy({key: "must be text"})
    value = value.strip()
    if required and not value:
        raise InvalidStudy({key: "this field is required"})
    if len(value) > limit or "\x00" in value:
        raise InvalidStudy({key: f"at most {limit} characters, and no null character"})
    return value


def _uuid(value: Any, key: str) -> uuid_module.UUID:
    try:
        return uuid_module.UUID(str(value))
    except ValueError:
        raise InvalidStudy({key: f"{value!r} is not a UUID"}) from None


def study_create(*, owner: AbstractBaseUser, data: Any) -> Study:
    """A study of ``owner``'s submissions named in ``data``; InvalidStudy names what is wrong."""
    if not isinstance(data, dict):
        raise InvalidStudy({"$": "expected a JSON object"})
    unknown = sorted(
        set(data)
        - {"title", "question", "benchmark", "metric", "vary", "reference", "point",
           "write_up", "submissions", "repeats"}
    )  # fmt: skip
    if unknown:
        raise InvalidStudy({key: "unknown field" for key in unknown})
    title = _text(data, "title", 200, required=True)
    question = _text(data, "question", 2000, required=True)
    write_up = _text(data, "write_up", 20000, required=False)
    reference = _text(data, "reference", 200, required=False)
    benchmark = _text(data, "benchmark", 40, required=True)
    metric = Metric.objects.filter(
        benchmark__name=benchmark, name=_text(data, "metric", 40, required=True)
    ).first()
    if metric is None:
        raise InvalidStudy(
            {"metric": f"no metric {data.get('metric')!r} of benchmark {benchmark!r}"}
        )
    varied = data.get("vary")
    if (
        not isinstance(varied, list)
        or not 1 <= len(varied) <= 2
        or any(name not in VARIABLE for name in varied)
        or len(set(varied)) != len(varied)
    ):
        raise InvalidStudy({"vary": f"one or two different names of: {', '.join(VARIABLE)}"})
    point = data.get("point", {})
    if not isinstance(point, dict) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in point.values()
    ):
        raise InvalidStudy({"point": 'an object of parameter values, e.g. {"operation": "TOTALS"}'})
    named = data.get("submissions")
    if not isinstance(named, list) or not 1 <= len(named) <= MAX_SUBMISSIONS:
        raise InvalidStudy({"submissions": f"a list of 1 to {MAX_SUBMISSIONS} submission uuids"})
    wanted = {_uuid(value, "submissions") for value in named}
    own = set(
        Submission.objects.filter(uuid__in=wanted, submitter=owner)
        .exclude(status=Submission.Status.DELETED)
        .values_list("uuid", flat=True)
    )
    if own != wanted:
        missing = ", ".join(sorted(str(u) for u in wanted - own))
        raise InvalidStudy({"submissions": f"not submissions of yours: {missing}"})
    runs = list(
        Run.objects.filter(submission__uuid__in=wanted, benchmark=metric.benchmark).select_related(
            "hardware", "storage", "os", "server", "client"
        )
    )
    if not runs:
        raise InvalidStudy({"submissions": f"no run of {benchmark} in these submissions"})
    values = {factor_value(run, varied[0]) for run in runs}
    if len(values) < 2:
        raise InvalidStudy(
            {"vary": f"{varied[0]} is {next(iter(values))!r} in every run: nothing varies"}
        )
    if reference and reference.casefold() not in {str(v).casefold() for v in values}:
        shown = ", ".join(sorted(str(v) for v in values))
        raise InvalidStudy({"reference": f"{reference!r} is not a value of {varied[0]}: {shown}"})
    repeats = None
    if data.get("repeats"):
        repeats = Study.objects.filter(uuid=_uuid(data["repeats"], "repeats")).first()
        if repeats is None:
            raise InvalidStudy({"repeats": "no such study"})
    with transaction.atomic():
        study = Study.objects.create(
            owner=owner,
            title=title,
            question=question,
            metric=metric,
            varied=varied,
            reference=reference,
            point=point,
            write_up=write_up,
            repeats=repeats,
        )
        study.runs.set(runs)
    return study


# The seed articles as studies: each names its curated submission (benchhub/imports/articles/).
SEED_STUDIES = (
    {
        "submission": "3458f568-5b9a-40c2-ba8a-48812cafb665",
        "title": "MySQL on FreeBSD: ZFS against UFS, by my.cnf profile (seed 002)",
        "question": "How much slower is sql-bench on ZFS than on UFS, for each configuration?",
        "benchmark": "sql-bench",
        "metric": "seconds",
        "point": {"operation": "TOTALS"},
        "vary": ["filesystem", "config_profile"],
        "reference": "ufs",
    },
    {
        "submission": "3cb7a902-00ad-4ce2-8a65-de4d39e4289e",
        "title": "Which filesystem for Firebird on Linux, relative to the raw device (seed 003)",
        "question": "Which filesystem and mount options give Firebird the most TPC-B and TPC-C "
        "throughput, with the raw device as 100?",
        "benchmark": "tpc-average",
        "metric": "score_relative",
        "vary": ["filesystem", "mount_options"],
        "reference": "raw",
    },
    {
        "submission": "da4a5496-1c6a-441d-a892-a2e2e1da916e",
        "title": "Firebird gbak and CPU placement (seed 001)",
        "question": "Does a backup over the local protocol slow down when gbak and the server "
        "share a core, or run on different ones?",
        "benchmark": "backup",
        "metric": "seconds",
        "vary": ["cpu_placement"],
        "reference": "same_core",
    },
    {
        "submission": "96e7da41-fb7b-44aa-9e3b-84ca30750064",
        "title": "MySQL against PostgreSQL under concurrent select-update (seed 004)",
        "question": "Which engine reaches the higher throughput as clients are added?",
        "benchmark": "select-update",
        "metric": "throughput",
        "vary": ["engine"],
    },
)


def seed_studies_load() -> list[Study]:
    """The seed articles' studies, made once from their curated submissions (loaded by
    imports.services.articles_load); a study already made, or whose article is not
    loaded, is left as it is."""
    from benchhub.imports.services import curator_user

    curator = curator_user()
    made = []
    for definition in SEED_STUDIES:
        submission = Submission.objects.filter(uuid=definition["submission"]).first()
        if submission is None or Study.objects.filter(title=definition["title"]).exists():
            continue
        data = {k: v for k, v in definition.items() if k != "submission"}
        study = study_create(
            owner=curator, data={**data, "submissions": [definition["submission"]]}
        )
        study.citation = submission.citation
        study.save(update_fields=["citation"])
        made.append(study)
    return made
