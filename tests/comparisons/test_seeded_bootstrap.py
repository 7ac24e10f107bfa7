"""The verdicts' bootstrap (``seeded_bootstrap_ratios``) takes each distinct
resample's median once: the same ratios, float for float, as drawing every
resample (``bootstrap_ratios``, the definition), so a verdict and its p and
interval do not move; runs side by side judge every metric at every point
with it."""

from __future__ import annotations

import random

import pytest
from benchhub_contract.inference import bootstrap_ratios, seeded_bootstrap_ratios
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
