"""The verdicts' bootstrap (``seeded_bootstrap_ratios``) takes each distinct
resample's median once: the same ratios, float for float, as drawing every
resample (``bootstrap_ratios``, the definition), so a verdict and its p and
interval do not move; runs side by side judge every metric at every point
with it."""

from __future__ import annotations

import random

import pytest
from benchhub_contract.inference import bootstrap_ratios, seeded_bootstrap_ratios, welch_p
from benchhub_contract.verdicts import SEED, RunValues, verdict


def sides(rng: random.Random, n_candidate: int, n_reference: int) -> tuple[list, list]:
    """Skewed, tied and zero values, of unequal sizes."""
    pick = [0.0, 1.0, 1.0, 2.5, 1e-300, 1e300]
    candidate = [
        rng.choice(pick) if rng.random() < 0.2 else rng.lognormvariate(3, 1)
        for _ in range(n_candidate)
    ]
    reference = [
        rng.choice(pick) if rng.random() < 0.2 else rng.lognormvariate(2, 0.5)
        for _ in range(n_reference)
    ]
    return candidate, reference


@pytest.mark.parametrize(
    ("n_candidate", "n_reference"), [(3, 3), (2, 5), (7, 4), (1, 9), (30, 12), (130, 3)]
)
@pytest.mark.parametrize("seed", [SEED, 7])
def test_the_same_ratios_as_drawing_every_resample(n_candidate, n_reference, seed):
    rng = random.Random(n_candidate * 1000 + n_reference + seed)
    for _ in range(3):
        candidate, reference = sides(rng, n_candidate, n_reference)

        assert seeded_bootstrap_ratios(candidate, reference, seed) == bootstrap_ratios(
            candidate, reference, random.Random(seed)
        )


def test_medians_beyond_a_double_give_the_definitions_ratios_and_verdict():
    huge = [1.7e308, 1.6e308, 1.5e308]  # a median of two of them is inf; inf / inf is NaN
    candidate, reference = [*huge, 2.0], [1.0, 1.7e308, 1.6e308, 1.2e308]

    ratios = seeded_bootstrap_ratios(candidate, reference, SEED)

    assert [repr(r) for r in ratios] == [
        repr(r) for r in bootstrap_ratios(candidate, reference, random.Random(SEED))
    ]
    assert any(r != r for r in ratios)
    judged = verdict(
        [RunValues(2.0, tuple(candidate))], [RunValues(1.0, tuple(reference))], direction="higher"
    )
    assert judged.test == "bootstrap"


def test_a_verdict_on_repetitions_reads_the_bootstrap_of_its_samples():
    candidate = [RunValues(1520.0, (1490.5, 1520.0, 1561.25))]
    reference = [RunValues(1402.0, (1388.0, 1402.0, 1430.5))]

    judged = verdict(candidate, reference, direction="higher")
    ratios = bootstrap_ratios(
        [1490.5, 1520.0, 1561.25], [1388.0, 1402.0, 1430.5], random.Random(SEED)
    )

    assert judged.test == "bootstrap"
    assert judged.ratio_low <= ratios[round(0.025 * (len(ratios) - 1))]
    assert judged.ratio_high >= ratios[round(0.975 * (len(ratios) - 1))]


def test_the_p_value_counts_ratios_of_exactly_one_on_both_sides():
    """Medians tie often on repeated values: ratios of exactly 1 count as on
    either side of 1, as the definition counts them one by one."""
    candidate, reference = [10.0, 10.0, 11.0], [10.0, 9.0, 10.0]
    ratios = bootstrap_ratios(candidate, reference, random.Random(SEED))
    far = min(sum(1 for r in ratios if r <= 1), sum(1 for r in ratios if r >= 1))

    judged = verdict(
        [RunValues(10.0, tuple(candidate))], [RunValues(10.0, tuple(reference))], direction="higher"
    )

    assert ratios.count(1.0) > 100
    assert judged.p_value == max(
        min(1.0, (2 * far + 1) / (len(ratios) + 1)), welch_p(candidate, reference)
    )
