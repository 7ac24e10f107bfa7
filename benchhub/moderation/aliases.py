"""Alias rules: "this normalized value is that one" (a CPU spelt two ways,
``openzfs`` and ``zfs``), declared by moderators.

Which fields can be aliased, and how each is normalized again from the raw
string kept beside it, so that removing a rule restores what normalization
alone gives. Fields of the comparability key (engine, version, load
engine) are not aliasable: rewriting them would move runs between keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import models

from benchhub.results.models import Hardware, OperatingSystem, Storage
from benchhub.results.normalization import (
    normalize_cpu,
    normalize_distribution,
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_virtualization,
)


@dataclass(frozen=True)
class Aliasable:
    model: type[models.Model]
    raw_field: str
    normalize: Callable[[str], str]  # raw string → the value before aliases
    label: str


ALIASABLE: dict[tuple[str, str], Aliasable] = {
    ("hardware", "cpu_vendor"): Aliasable(
        Hardware, "cpu_raw", lambda raw: normalize_cpu(raw).vendor, "CPU vendor"
    ),
    ("hardware", "cpu_model"): Aliasable(
        Hardware, "cpu_raw", lambda raw: normalize_cpu(raw).model, "CPU model"
    ),
    ("hardware", "virtualization"): Aliasable(
        Hardware, "virtualization_raw", lambda raw: normalize_virtualization(raw), "virtualization"
    ),
    ("storage", "filesystem"): Aliasable(
        Storage, "filesystem_raw", lambda raw: normalize_filesystem(raw), "filesystem"
    ),
    ("storage", "io_scheduler"): Aliasable(
        Storage, "io_scheduler_raw", lambda raw: normalize_io_scheduler(raw), "I/O scheduler"
    ),
    ("os", "distribution"): Aliasable(
        OperatingSystem, "distribution_raw", normalize_distribution, "OS distribution"
    ),
}

_CACHE_KEY = "moderation:alias-rules"
_CACHE_SECONDS = 300


def alias_map() -> dict[tuple[str, str], dict[str, str]]:
    """(dimension, field) → {from: to}, from the cache: every upload reads
    it, rules change rarely (moderation.services clears it on a change)."""
    rules = cache.get(_CACHE_KEY)
    if rules is None:
        from benchhub.moderation.models import AliasRule

        rules = {}
        for dimension, name, source, target in AliasRule.objects.values_list(
            "dimension", "field", "from_value", "to_value"
        ):
            rules.setdefault((dimension, name), {})[source] = target
        cache.set(_CACHE_KEY, rules, _CACHE_SECONDS)
    return rules


def alias_map_forget() -> None:
    cache.delete(_CACHE_KEY)


def aliases_apply(dimension: str, values: dict[str, Any], rules=None) -> dict[str, Any]:
    """``values`` (a dimension row's fields) with the alias rules applied."""
    rules = alias_map() if rules is None else rules
    out = values
    for (rule_dimension, name), mapping in rules.items():
        if rule_dimension == dimension and values.get(name) in mapping:
            if out is values:
                out = dict(values)
            out[name] = mapping[values[name]]
    return out


def renormalized(dimension: str, name: str, raw: str, rules) -> str:
    """What normalization and the current rules make of ``raw`` today."""
    spec = ALIASABLE[dimension, name]
    value = spec.normalize(raw or "")
    return rules.get((dimension, name), {}).get(value, value)
