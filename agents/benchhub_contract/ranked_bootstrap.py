"""The verdicts' bootstrap of a few repetitions a side, in a handful of
divisions: ``bootstrap_counts`` gives ``seeded_bootstrap_ratios``'s ratios as
(ratio, how many rounds drew it), the same floats in the same order.

A resample's median is one of its side's values (or the mean of two, for an
even count), and which one depends only on the order of the side's values,
not on the values: of three repetitions, the median of every resample is the
smallest, the middle or the largest one. So for each order of each side (6
for three repetitions) the rounds are counted once per pair of median ranks
(9 for three against three, where ``multiset_ratio_counts`` divides up to
100 pairs of distinct resamples), and a cell divides those. Twelve runs of
select-update side by side judge 891 cells, most of three repetitions.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from .inference import _bootstrap_multisets, multiset_ratio_counts

__all__ = ["bootstrap_counts", "counted_quantile"]

# Sides of up to this many values are taken by the order of their values:
# 24 orders of four, 576 pairs of orders per pair of sizes, each kept.
RANKED_SIDES = 4

Rank = tuple[int, ...]  # the ranks a median reads: one (odd count) or two (even)


def bootstrap_counts(
    candidate: list[float], reference: list[float], seed: int
) -> list[tuple[float, int]]:
    """``seeded_bootstrap_ratios(candidate, reference, seed)`` as its distinct
    ratios in order, each with how many rounds drew it."""
    if max(len(candidate), len(reference)) <= RANKED_SIDES:
        ordered_reference, ordered_candidate = sorted(reference), sorted(candidate)
        reference_ranks, candidate_ranks, pairs = _median_rank_pairs(
            len(reference), len(candidate), seed, _order(reference), _order(candidate)
        )
        denominators = [_median(ordered_reference, ranks) for ranks in reference_ranks]
        numerators = [_median(ordered_candidate, ranks) for ranks in candidate_ranks]
        drawn = sorted(
            (numerators[c] / denominators[r], count) for r, c, count in pairs if denominators[r]
        )
        # NaN (inf / inf) and a zero of either sign: where the definition's
        # sort leaves them depends on how the rounds are grouped, which is
        # multiset_ratio_counts's own
        if all(ratio == ratio and ratio for ratio, _ in drawn):
            return drawn
    return multiset_ratio_counts(candidate, reference, seed)


def counted_quantile(drawn: list[tuple[float, int]], total: int, q: float) -> float:
    """``inference.quantile`` of the ratios ``drawn`` counts (``total`` of
    them), with its arithmetic, without writing each one out."""
    position = q * (total - 1)
    lower = int(position)
    upper = min(lower + 1, total - 1)
    low_value = high_value = None
    seen = 0
    for ratio, count in drawn:
        seen += count
        if low_value is None and lower < seen:
            low_value = ratio
        if upper < seen:
            high_value = ratio
            break
    return low_value + (high_value - low_value) * (position - lower)


def _order(values: list[float]) -> Rank:
    """Each value's rank among its side's (equal values in index order)."""
    ranks = [0] * len(values)
    for rank, index in enumerate(sorted(range(len(values)), key=values.__getitem__)):
        ranks[index] = rank
    return tuple(ranks)


def _median(ordered: list[float], ranks: Rank) -> float:
    """statistics.median's arithmetic on the values at ``ranks`` of ``ordered``."""
    if len(ranks) == 1:
        return ordered[ranks[0]]
    return (ordered[ranks[0]] + ordered[ranks[1]]) / 2


@lru_cache(maxsize=1024)
def _median_rank_pairs(
    n_reference: int, n_candidate: int, seed: int, reference_order: Rank, candidate_order: Rank
) -> tuple[tuple[Rank, ...], tuple[Rank, ...], tuple[tuple[int, int, int], ...]]:
    """Per side the ranks its resamples' medians read, and how many rounds
    drew each pair of them, for sides whose values are in these orders."""
    reference_sets, candidate_sets, pairs = _bootstrap_multisets(n_reference, n_candidate, seed)
    reference_keys, reference_of = _median_ranks(reference_sets, reference_order)
    candidate_keys, candidate_of = _median_ranks(candidate_sets, candidate_order)
    counted: Counter[tuple[int, int]] = Counter()
    for (r, c), count in pairs:
        counted[reference_of[r], candidate_of[c]] += count
    return reference_keys, candidate_keys, tuple((r, c, n) for (r, c), n in counted.items())


def _median_ranks(
    resamples: tuple[tuple[int, ...], ...], order: Rank
) -> tuple[tuple[Rank, ...], list[int]]:
    """The distinct ranks the resamples' medians read, and each resample's."""
    keys: dict[Rank, int] = {}
    of = []
    for resample in resamples:
        ranks = sorted(order[i] for i in resample)
        middle = len(ranks) // 2
        key = (ranks[middle],) if len(ranks) % 2 else (ranks[middle - 1], ranks[middle])
        of.append(keys.setdefault(key, len(keys)))
    return tuple(keys), of
