"""The comparison table's cells (templatetags/comparisons.py): written with
one f-string per cell instead of format_html, for speed; the HTML must be
what format_html wrote, to the byte, escaping included."""

from __future__ import annotations

import random
from typing import Any

import pytest
from benchhub_contract.verdicts import Verdict
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from benchhub.comparisons.aggregation import Point
from benchhub.comparisons.templatetags.comparisons import (
    comparison_cells,
    figure,
    verdict_class,
    verdict_detail,
    verdict_label,
    verdict_mark,
    verdict_numbers,
)

MISSING = mark_safe('<span class="missing" title="no measurement">\u2014</span>')


def format_html_cell(point: Any, reference: Any, unit: str) -> SafeString:
    """The tag as it was, one format_html per part: the oracle."""
    if not point:
        return MISSING
    if reference is not None:
        value = format_html(
            '<span class="value">{}</span> <span class="absolute">{}&nbsp;{}</span>',
            figure(point.relative),
            figure(point.value),
            unit,
        )
    else:
        value = format_html('<span class="value">{}</span>', figure(point.value))
    spread = f", {figure(point.min)}\u2013{figure(point.max)}" if point.n > 1 else ""
    html = format_html('{} <span class="n">n={}{}</span>', value, point.n, spread)
    if point.verdict:
        verdict = point.verdict
        html = format_html(
            '{} <span class="verdict {}" title="{}">{} {}</span>',
            html,
            verdict_class(verdict),
            verdict_detail(verdict),
            verdict_mark(verdict),
            verdict_label(verdict),
        )
        if verdict_numbers(verdict):
            html = format_html(
                '{} <span class="verdict-numbers">{}</span>', html, verdict_numbers(verdict)
            )
    return html


def random_verdict(rng: random.Random) -> Verdict | None:
    kind = rng.choice(("none", "insufficient", "u", "bootstrap", "no interval"))
    if kind == "none":
        return None
    if kind == "insufficient":
        return Verdict("insufficient data", None, None, rng.choice((None, 1.5)), None, None, 0.05)
    low, high = (None, None) if kind == "no interval" else (rng.uniform(0.5, 1), rng.uniform(1, 2))
    return Verdict(
        rng.choice(("better", "worse", "higher", "lower", "equivalent", "inconclusive")),
        "mann-whitney-u" if kind == "u" else "bootstrap",
        rng.choice((0.0, 1e-12, 0.04999, 1.0)),
        rng.uniform(0.5, 2),
        low,
        high,
        rng.choice((0.05, 0.0, 0.01)),
    )


def random_number(rng: random.Random) -> Any:
    return rng.choice(
        (0.0, -0.0, 1800.0, 107.3, 0.6271, 123456.789, -1e18, 5e-324, 3, float("inf"), None)
    )


def random_point(rng: random.Random) -> Point | None:
    if rng.random() < 0.15:
        return None
    return Point(
        x=rng.choice(("op_01", 20, "<b>&")),
        value=random_number(rng),
        n=rng.choice((1, 2, 7, 10_000)),
        min=random_number(rng),
        max=random_number(rng),
        relative=random_number(rng),
        verdict=random_verdict(rng),
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_row_of_cells_is_what_format_html_wrote(seed):
    rng = random.Random(seed)
    points = [random_point(rng) for _ in range(rng.randint(0, 8))]
    reference = rng.choice((None, "", "ext4", "<i>ext4</i>"))
    unit = rng.choice(("s", "ms", "tps", '<a href="x">&"\'', ""))

    expected = "".join(
        f'<td class="number">{format_html_cell(point, reference, unit)}</td>' for point in points
    )
    cells = comparison_cells(points, reference, unit)

    assert cells == expected
    assert isinstance(cells, SafeString)


@pytest.mark.parametrize("word", ["better", "inconclusive"])
def test_a_cells_verdict_figures_are_the_rounded_ratios_of_the_json(word):
    # 1.23499999999999 is 1.235 at the JSON's 12 digits (ratio_rounded): 1.24
    # at 3, where the unrounded float reads 1.23. The row is built with the
    # ratios rounded once for its title, label and numbers: the filters' own.
    judged = Verdict(word, "mann-whitney-u", 0.01, 1.23499999999999, 0.9994999999999999,
                     1.23499999999999, 0.05)  # fmt: skip
    point = Point(x="op_01", value=2.0, n=3, min=1.0, max=3.0, relative=123.5, verdict=judged)

    cells = comparison_cells([point], "ufs", "s")

    assert cells == f'<td class="number">{format_html_cell(point, "ufs", "s")}</td>'
    assert "ratio 1.24" in cells
    assert "ratio 1.235" in cells  # the title's 4 digits


def test_a_unit_with_markup_is_escaped():
    point = Point(x="op", value=2.0, n=1, min=2.0, max=2.0, relative=100.0)
    cells = comparison_cells([point], "ext4", "<script>")
    assert "&lt;script&gt;" in cells and "<script>" not in cells


def test_a_verdict_without_an_interval_says_there_is_none():
    judged = Verdict("inconclusive", "mann-whitney-u", 0.333, 1.21, None, None, 0.05)
    assert verdict_detail(judged) == (
        "mann-whitney-u, p = 0.333; ratio 1.21, no 95 % interval "
        "(too few runs or operations to bound one, or a value of 0 or less); "
        "inconclusive: the interval reaches past \u00b15 %, so the data cannot tell "
        "whether the difference reaches 5 %"
    )
    assert verdict_label(judged) == "inconclusive: no 95 % interval"


# seed 002's TOTALS, UFS against ZFS, as the comparison gives it
SEED_002_TOTALS = Verdict(
    "inconclusive", "mann-whitney-u", 0.1111111111111111, 1.71290322581, 0.856209150327,
    2.63157894737, 0.05,
)  # fmt: skip


def test_an_inconclusive_cell_shows_its_interval_beside_the_word():
    point = Point(
        x="TOTALS", value=265.5, n=4, min=255.0, max=400.0, relative=171.29, verdict=SEED_002_TOTALS
    )
    cells = comparison_cells([point], "ufs", "s")
    assert (
        '<span class="verdict verdict-inconclusive" title="mann-whitney-u, p = 0.111; ratio 1.713, '
        "95 % interval 0.8562 to 2.632; inconclusive: the interval reaches past \u00b15 %, so the "
        'data cannot tell whether the difference reaches 5 %">'
        "? inconclusive: 0.856\u20132.63 \u00d7</span>"
    ) in cells
    # the interval once: beside the word, not again under it
    assert '<span class="verdict-numbers">p = 0.11 \u00b7 ratio 1.71</span>' in cells


@pytest.mark.parametrize(
    ("word", "mark", "meaning"),
    [
        ("better", "\u25b2", "better: p < 0.05 and at least 5 % apart"),
        ("lower", "\u25bc", "lower: p < 0.05 and at least 5 % apart"),
        (
            "equivalent",
            "=",
            "equivalent: the interval lies within \u00b15 %, so any difference is smaller",
        ),
    ],
)
def test_each_word_has_its_mark_and_says_what_it_means(word, mark, meaning):
    judged = Verdict(word, "bootstrap", 0.0123, 0.97, 0.961, 0.983, 0.05)
    assert verdict_mark(judged) == mark
    assert verdict_label(judged) == word
    assert verdict_detail(judged).endswith("; " + meaning)
    assert verdict_numbers(judged) == "p = 0.012 \u00b7 ratio 0.97 (0.961\u20130.983)"
