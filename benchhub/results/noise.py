"""Noise flags of a run, computed once when it is stored. Pure functions.

- ``noisy``: its repetitions vary: the median, over its measurements with
  at least two samples, of the coefficient of variation (sample standard
  deviation / |mean|) is above 5 %. The median, so that one unsteady point
  of a 100-point sweep does not flag the whole run, and a run that is
  unsteady throughout is flagged.
- ``unrepeated``: fewer than 3 repetitions (the run's ``repetitions``, or
  the most samples any of its measurements has, whichever is larger).
- ``client-bound``: the load engine reported its own CPU at 95 % or more
  (``load_engine_cpu``): the client, not the server, may have set the pace.

A run with no flag is ``quiet``. Flags are stored comma-joined in sorted
order ("noisy,unrepeated"), the empty text for a quiet run.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NOISY_CV = 0.05
MIN_REPETITIONS = 3
CLIENT_BOUND_CPU = 95.0

NOISY, UNREPEATED, CLIENT_BOUND = "noisy", "unrepeated", "client-bound"
QUIET = "quiet"
FLAGS = (CLIENT_BOUND, NOISY, UNREPEATED)


@dataclass(frozen=True)
class RunNoise:
    flags: tuple[str, ...]
    cv: float | None  # the median coefficient of variation, None without samples
    repetitions: int

    @property
    def stored(self) -> str:
        return ",".join(self.flags)


def run_noise(
    *,
    repetitions: int | None,
    samples: Iterable[Sequence[float]],
    load_engine_cpu: float | None = None,
) -> RunNoise:
    """``samples``: each measurement's repetition samples (empty when none)."""
    cvs = []
    most = 0
    for values in samples:
        most = max(most, len(values))
        cv = coefficient_of_variation(values)
        if cv is not None:
            cvs.append(cv)
    cv = statistics.median(cvs) if cvs else None
    count = max(repetitions or 1, most)
    flags = set()
    if cv is not None and cv > NOISY_CV:
        flags.add(NOISY)
    if count < MIN_REPETITIONS:
        flags.add(UNREPEATED)
    if load_engine_cpu is not None and load_engine_cpu >= CLIENT_BOUND_CPU:
        flags.add(CLIENT_BOUND)
    return RunNoise(tuple(sorted(flags)), cv, count)


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation / |mean|; None for fewer than two values or
    a mean of zero. In floats, two passes with exact sums: statistics.stdev
    works in exact fractions, which cost a tenth of an upload's CPU (an
    upload computes one per measurement) for digits a 5 % threshold never
    reads."""
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    if not mean:
        return None
    if abs(mean) < sys.float_info.min or min(values) < 0 < max(values):
        # A subnormal mean, or signs that cancel: exact fractions, as before.
        return statistics.stdev(values) / abs(mean)
    # Deviations relative to the mean before squaring: the squares of 1e-300
    # or 1e18 would leave a double; these cannot (one sign: |mean| >= |value| / n).
    relative = math.fsum(((value - mean) / mean) ** 2 for value in values)
    return math.sqrt(relative / (len(values) - 1))
