"""``fixed``: the text of Django's ``floatformat:"-<places>"``, written out for
the ratios a page of runs side by side prints by the thousand."""

from __future__ import annotations

import random

import pytest
from django.template.defaultfilters import floatformat

from benchhub.comparisons.templatetags.comparisons import fixed


def values() -> list[float]:
    rng = random.Random(20261206)
    drawn = [rng.lognormvariate(0, 1.5) for _ in range(3000)]
    drawn += [round(rng.uniform(0, 40), rng.randint(0, 4)) for _ in range(2000)]
    drawn += [-v for v in drawn[:500]]
    # halves at the rounding place: half up from the decimal repr, as the filter
    drawn += [0.0005, 0.0015, 1.0045, 2.675, 0.125, 0.375, 1.005, -2.675, -0.0004, -0.0012, -0.004]
    # each edge of the written-out range, and what lies beyond it
    drawn += [0.001, 0.000999, 999999999999.5, 1e12, 3e15, 1e-9, 0.0, -0.0, 7.0, 1e18]
    return drawn


@pytest.mark.parametrize("places", [2, 3])
def test_the_same_text_as_floatformat(places):
    for value in values():
        assert fixed(value, places) == floatformat(value, f"-{places}"), value


def test_what_is_not_a_float_goes_to_the_filter():
    assert fixed(None, 3) == floatformat(None, "-3") == ""
    assert fixed(2, 3) == "2" and fixed(float("inf"), 2) == "inf"
