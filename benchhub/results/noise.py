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

import statistics
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
        if len(values) >= 2:
            mean = statistics.fmean(values)
            if mean:
                cvs.append(statistics.stdev(values) / abs(mean))
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
