from __future__ import annotations

import shlex
from typing import Any

from benchhub_contract.studies import NEEDS, REPEATABLE
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from benchhub.lib.methods import page_methods
from benchhub.results.models import Submission
from benchhub.results.reproduction import agent_benchmark, example_dsn
from benchhub.studies.selectors import (
    machines_side_by_side,
    study_get,
    study_list,
    study_table,
)


@page_methods("GET")
def studies_page(request: HttpRequest) -> HttpResponse:
    return render(request, "studies/list.html", {"studies": study_list(user=request.user)[:200]})


@page_methods("GET")
def study_page(request: HttpRequest, uuid: str) -> HttpResponse:
    study = study_get(user=request.user, uuid=uuid)
    if study is None:
        raise Http404("No study with this uuid that you may see.")
    table = study_table(study)
    chart = {
        "labels": [str(x) for x in table.x_values],
        "series": [
            {
                "label": f"{study.varied[1]} {series or '(none)'}"
                if len(study.varied) > 1
                else study.metric.name,
                "values": [
                    None
                    if (cell := table.cells.get((series, x))) is None
                    else (cell.relative if table.reference is not None else cell.median)
                    for x in table.x_values
                ],
            }
            for series in table.series
        ],
        "axis": f"relative to {table.reference} = 100"
        if table.reference is not None
        else f"{study.metric.name} ({study.metric.unit})",
    }
    repetitions = list(study_list(user=request.user).filter(repeats=study).order_by("created_at"))
    machines = machines_side_by_side(study, repetitions)
    if machines:
        chart["machines"] = {
            "labels": [str(x) for x in machines.levels],
            "series": [
                {
                    "label": f"{m.study.owner.get_username()}: {m.study.title}",
                    "values": [m.relative.get(x) for x in machines.levels],
                }
                for m in machines.machines
            ],
            "axis": f"% of {machines.basis} on each machine",
        }
    return render(
        request,
        "studies/study.html",
        {
            "study": study,
            "table": table,
            "chart": chart,
            "repetitions": repetitions,
            "machines": machines,
            "repeat": repeat_command(request, study, table),
        },
    )


def repeat_command(request: HttpRequest, study: Any, table: Any) -> dict[str, Any]:
    """How another machine asks the study's question: ``benchhub-agent study --like URL``
    for a study the agent made; for one from an article (whose runs the agent cannot
    replay), a new study of the same factors; with what to add for each factor. Or why
    the agent can do neither."""
    benchmark = study.metric.benchmark.name
    agent = agent_benchmark(benchmark)
    if agent is None:
        return {"cannot": f"The agent has no {benchmark} benchmark to run."}
    cannot = [name for name in study.varied if name not in REPEATABLE]
    if cannot:
        return {
            "cannot": f"The agent cannot vary {', '.join(cannot)}; it varies "
            f"{', '.join(sorted(REPEATABLE))}."
        }
    run = study.runs.select_related("server", "submission").order_by("id").first()
    engine = run.server.engine if run else ""
    dsn = example_dsn(engine if engine in agent["engines"] else agent["engines"][0])
    needs = [(name, NEEDS[name]) for name in study.varied if name in NEEDS]
    if run is not None and run.submission.source == Submission.Source.AGENT:
        url = request.build_absolute_uri(reverse("studies:study", args=[study.uuid]))
        return {
            "command": f"benchhub-agent study --like {url} --dsn {dsn} --upload",
            "needs": needs,
        }
    levels = [table.x_values, table.series]
    vary = " ".join(
        f"--vary {REPEATABLE[name]}" + _levels_argument(name, levels[i])
        for i, name in enumerate(study.varied)
    )
    return {
        "command": f"benchhub-agent study {benchmark} --dsn {dsn} {vary} --upload",
        "needs": needs,
        "fresh": "Its runs come from a published article, not from the agent, so --like "
        "cannot replay them; the agent asks the same question on your machine as a new study:",
    }


def _levels_argument(factor: str, values: list[Any]) -> str:
    """The levels a new study passes: the article's own, but for the filesystems (the
    --on directories are the levels) and settings profiles (their names alone do not
    say what to set)."""
    if factor == "filesystem":
        return ""
    if factor == "config_profile":
        return " 'NAME:SETTING=VALUE,…;NAME:…'"
    return " " + shlex.quote(";".join(str(value) for value in values if value not in ("", None)))
