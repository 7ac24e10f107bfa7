from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from benchhub.lib.methods import page_methods
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
        },
    )
