"""Query-string filters shared by the run and measurement endpoints, the
CSV export, the comparisons and the pages: the one place that decides what
a filter value means.

Every environment dimension field can be filtered on. Parameters are
filtered with ``param.<name>=<value>`` (the measurement's point, e.g.
``param.clients=20``) and ``run_param.<name>=<value>`` (what the run was
asked to do, e.g. ``run_param.locking=for_update``).

Text values match case-insensitively (``engine=PostgreSQL``,
``cpu_model=epyc``). A value of a closed vocabulary (engine, protocol,
storage kind, benchmark, metric …) that is not in it is an error listing the
known values, so that a typo is never answered with a silent empty list; a
free value (a CPU model, a filesystem) that matches nothing is an empty list.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import django_filters
from benchhub_contract.schema import benchmark_catalog, submission_schema
from django import forms
from django.db import models
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import ValidationError

from benchhub.results import events
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.noise import FLAGS as NOISE_FLAGS
from benchhub.results.noise import QUIET
from benchhub.results.normalization import (
    normalize_distribution,
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_mount_options,
)
from benchhub.results.normalization.empty import EMPTY_SHOWN, means_empty
from benchhub.results.normalization.storage import mount_option_is_irrelevant
from benchhub.results.normalization.versions import version_sort_text

# Query parameters that are not filters: pagination and output format.
NON_FILTER_PARAMETERS = {"cursor", "page_size", "format"}

PARAM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# A number as a query string or a JSON string parameter may spell it: ASCII
# digits only ("٢٠" and "2_0" are text), finite, and short enough to convert.
_NUMBER = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?")

# query name → (model path below the run, lookup)
RUN_FIELDS: dict[str, tuple[str, str]] = {
    "benchmark": ("benchmark__name", "exact"),
    "benchmark_version": ("benchmark_version", "iexact"),
    "fingerprint": ("fingerprint", "exact"),
    "submission": ("submission__uuid", "exact"),
    "source": ("submission__source", "exact"),
    "status": ("submission__status", "exact"),
    "submitter": ("submission__submitter__username", "iexact"),
    "cpu_vendor": ("hardware__cpu_vendor", "iexact"),
    "cpu_model": ("hardware__cpu_model", "icontains"),
    "cores": ("hardware__cores", "exact"),
    "threads": ("hardware__threads", "exact"),
    "ram_bytes_min": ("hardware__ram_bytes", "gte"),
    "ram_bytes_max": ("hardware__ram_bytes", "lte"),
    "virtualization": ("hardware__virtualization", "iexact"),
    "storage_kind": ("storage__kind", "exact"),
    "device_model": ("storage__device_model", "icontains"),
    "raid": ("storage__raid", "iexact"),
    "filesystem": ("storage__filesystem", "exact"),
    "mount_options": ("storage__mount_options", "exact"),
    "io_scheduler": ("storage__io_scheduler", "exact"),
    "os_family": ("os__family", "exact"),
    "os_distribution": ("os__distribution", "exact"),
    "os_version": ("os__version", "iexact"),
    "kernel": ("os__kernel", "istartswith"),
    "engine": ("server__engine", "exact"),
    "version": ("server__version", "iexact"),
    "version_major": ("server__version_major", "iexact"),
    "architecture": ("server__architecture", "exact"),
    "config_profile": ("server__config_profile", "iexact"),
    "protocol": ("client__protocol", "exact"),
    "driver": ("client__driver", "iexact"),
    "cpu_placement": ("client__cpu_placement", "exact"),
    "load_engine": ("client__load_engine", "iexact"),
}

INTEGER_FIELDS = {"cores", "threads", "ram_bytes_min", "ram_bytes_max"}

# Filters on free text people type (no closed list of values): a value that
# matches nothing gets the nearest known values suggested on the pages.
FREE_TEXT_FILTERS = (
    "cpu_vendor",
    "cpu_model",
    "virtualization",
    "device_model",
    "filesystem",
    "io_scheduler",
    "mount_options",
    "os_distribution",
    "os_version",
    "version",
    "version_major",
    "config_profile",
    "driver",
    "load_engine",
)

# Filter values go through the same normalization as uploads, so that
# ?filesystem=UFS2 finds what was stored as "ufs" (and the lookup stays an
# indexable equality on the stored, lower-case value).
NORMALIZERS = {
    "filesystem": normalize_filesystem,
    "io_scheduler": normalize_io_scheduler,
    "mount_options": normalize_mount_options,
    "os_distribution": normalize_distribution,
    "fingerprint": str.lower,
}


def _schema_enum(section: str, field: str) -> list[str]:
    return list(submission_schema()["$defs"][section]["properties"][field]["enum"])


@functools.cache
def _closed_vocabularies() -> dict[str, list[str]]:
    catalog = benchmark_catalog()["benchmarks"]
    return {
        "engine": _schema_enum("database", "engine"),
        "architecture": _schema_enum("database", "architecture"),
        "protocol": _schema_enum("client", "protocol"),
        "cpu_placement": _schema_enum("client", "cpu_placement"),
        "storage_kind": _schema_enum("storage", "kind"),
        "os_family": _schema_enum("os", "family"),
        "source": [choice.value for choice in Submission.Source],
        "status": [choice.value for choice in Submission.Status],
        "benchmark": [entry["name"] for entry in catalog],
        "metric": sorted({m["name"] for entry in catalog for m in entry["metrics"]}),
    }


def known_values(name: str, benchmark: str = "") -> list[str] | None:
    """The values a closed-vocabulary filter can take (a benchmark's own
    metrics when it is given), or None for a free one."""
    if name == "metric" and benchmark:
        for entry in benchmark_catalog()["benchmarks"]:
            if entry["name"] == benchmark.strip().lower():
                return [metric["name"] for metric in entry["metrics"]]
    return _closed_vocabularies().get(name)


def closed_value(name: str, value: str, benchmark: str = "") -> str:
    """``value`` of a closed vocabulary as stored (lower case), or a
    ValidationError naming the known values."""
    known = known_values(name, benchmark)
    if known is None:
        return value
    canonical = value.strip().lower()
    if canonical not in known:
        within = f" of {benchmark.strip().lower()}" if name == "metric" and benchmark else ""
        raise ValidationError(
            {name: f"unknown {name}{within} {value!r}; known values: {', '.join(known)}"}
        )
    return canonical


# Filters on a field a moderator's alias rule can rewrite (the dimension
# and field of benchhub.moderation.aliases.ALIASABLE): a spelling mapped
# away by a rule finds the value it was mapped to.
ALIASED_FILTERS: dict[str, tuple[str, str]] = {
    "cpu_vendor": ("hardware", "cpu_vendor"),
    "cpu_model": ("hardware", "cpu_model"),
    "virtualization": ("hardware", "virtualization"),
    "filesystem": ("storage", "filesystem"),
    "io_scheduler": ("storage", "io_scheduler"),
    "os_distribution": ("os", "distribution"),
}


def alias_targets(name: str, value: str, lookup: str = "exact") -> list[str]:
    """The canonical values that alias rules map ``value`` of filter
    ``name`` to (compared case-insensitively, as the filters are; for a
    substring filter, every rule whose spelling contains ``value``). Stored
    rows are rewritten to the canonical value when a rule is added, so a
    filter on the old spelling would otherwise find nothing. Read from the
    cached rule map: no query on most requests."""
    if name not in ALIASED_FILTERS:
        return []
    wanted = value.strip().casefold()
    if not wanted:
        return []
    mapping = events.hooks.alias_rules().get(ALIASED_FILTERS[name], {})
    if lookup == "icontains":
        found = [to for source, to in mapping.items() if wanted in source.casefold()]
    else:
        found = [to for source, to in mapping.items() if source.casefold() == wanted]
    return sorted(set(found) - {value})


def alias_q(name: str, path: str, lookup: str, value: str) -> Q:
    """``path__lookup=value``, or the canonical value of an alias spelling
    (matched exactly: the rule names one whole value)."""
    condition = Q(**{f"{path}__{lookup}": value})
    exact = "iexact" if lookup.startswith("i") else "exact"
    for target in alias_targets(name, value, lookup):
        condition |= Q(**{f"{path}__{exact}": target})
    return condition


class _EmptyShownField:
    """A form field that lets EMPTY_SHOWN through to the filter's method,
    which says what it means there (``_filter``), before the field's own
    check ("Enter a whole number.", "Enter a valid UUID.") could."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and means_empty(value):
            return EMPTY_SHOWN
        return super().to_python(value)  # type: ignore[misc]

    def run_validators(self, value: Any) -> None:
        if value != EMPTY_SHOWN:  # a bound such as 1e50 compares numbers only
            super().run_validators(value)  # type: ignore[misc]


class _WholeNumberField(_EmptyShownField, forms.IntegerField):
    pass


class _UUIDField(_EmptyShownField, forms.UUIDField):
    pass


@extend_schema_field(OpenApiTypes.INT)  # a NumberFilter is documented as any number
class WholeNumberFilter(django_filters.NumberFilter):
    """A count (cores, threads, bytes): "8.5" is refused. NumberFilter reads
    a decimal, which Django's integer lookup cut to 8 and answered with the
    8-core runs; "8.0" is still 8."""

    field_class = forms.IntegerField


class FlagField(forms.Field):
    """true or false, in any letter case; empty is no filter."""

    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        # The value as a parameter, not in the text: django-filter formats the
        # message with its params, and a "%" in it was a TypeError, a 500.
        raise forms.ValidationError(
            "%(value)r: true or false", code="invalid", params={"value": value}
        )


class FlagFilter(django_filters.BooleanFilter):
    """A yes/no column. django-filter's BooleanFilter read any value but
    true/false ("1", "yes", a typo) as no filter at all and answered every
    row, the silent answer a typo of a filter's name no longer gets."""

    field_class = FlagField


def _run_field(name: str) -> models.Field:
    """The model field filter ``name`` (of RUN_FIELDS) reads."""
    model: Any = Run
    *relations, column = RUN_FIELDS[name][0].split("__")
    for relation in relations:
        model = model._meta.get_field(relation).related_model
    return model._meta.get_field(column)


@functools.cache
def can_be_empty(name: str) -> bool:
    """Whether filter ``name`` (of RUN_FIELDS) has an empty value: a text
    column that may be blank (no filesystem given, no architecture outside
    Firebird). A missing count (cores, threads) is not one: a comparison
    leaves such runs out, so no "(none)" series or facet shows it."""
    field = _run_field(name)
    return isinstance(field, (models.CharField, models.TextField)) and field.blank


# What a bound filter (ram_bytes_min, ram_bytes_max) keeps, by its lookup.
_BOUND_KEEPS = {"gte": "at least", "lte": "at most"}


def _never_empty_message(name: str) -> str:
    """Why "(none)" names no run for filter ``name``, in its own terms: a
    bound is no value of a column ("ram_bytes_min is never empty (a run that
    gave none is left out of a comparison by ram_bytes_min)" read as if
    RAM bounds were a dimension); a required value is on every run."""
    field = _run_field(name)
    shown = f"{EMPTY_SHOWN}, as the pages show an empty value,"
    lookup = RUN_FIELDS[name][1]
    if lookup in _BOUND_KEEPS:
        return (
            f"{shown} is no bound: {name} takes a whole number and keeps the runs whose "
            f"{field.name} is {_BOUND_KEEPS[lookup]} that (a run that gave none is within "
            "no bound); leave it out to keep every run"
        )
    if field.null:
        return (
            f"{shown} names no run here: {name} is never empty (a run that gave none is "
            f"left out of a comparison by {name}); give one of its values"
        )
    return (
        f"{shown} names no run here: {name} is never empty, every run has one; "
        "give one of its values"
    )


def _empty_q(name: str, path: str) -> Q:
    """``name``=(none): the runs whose value is empty, matched as the equality
    it is (not UPPER(column) = UPPER(''), nor a substring or prefix of "",
    which every value has); a 400 where the value is never empty."""
    if not can_be_empty(name):
        raise ValidationError({name: _never_empty_message(name)})
    return Q(**{path: ""})


def _filter(name: str, path: str, lookup: str) -> django_filters.Filter:
    cls: type[django_filters.Filter] = django_filters.CharFilter
    field_class: type[forms.Field] = forms.CharField
    schema_type = OpenApiTypes.STR
    if name in INTEGER_FIELDS:
        cls, field_class, schema_type = WholeNumberFilter, _WholeNumberField, OpenApiTypes.INT
    if name == "submission":
        # not-a-uuid is a 400, not a database error
        cls, field_class, schema_type = django_filters.UUIDFilter, _UUIDField, OpenApiTypes.UUID
    normalize = NORMALIZERS.get(name)
    if normalize is None and known_values(name) is not None:

        def normalize(value: str) -> str:
            return closed_value(name, value)

    normalize = normalize or (lambda value: value)

    known = known_values(name)
    if known is not None:  # what the server takes, "(none)" where a value can be empty
        schema_type = {"type": "string", "enum": [*known, *([EMPTY_SHOWN] * can_be_empty(name))]}

    @extend_schema_field(schema_type)  # the value's type, which "(none)" made Any
    def method(queryset: QuerySet, field: str, value: Any) -> QuerySet:
        # The one rule for every filter: "(none)" is the empty value.
        if isinstance(value, str) and means_empty(value):
            return queryset.filter(_empty_q(name, path))
        value = normalize(value)
        if name in ALIASED_FILTERS:
            return queryset.filter(alias_q(name, path, lookup, value))
        return queryset.filter(**{f"{path}__{lookup}": value})

    filter_ = cls(method=method)
    filter_.field_class = field_class
    return filter_


def parameter_number(raw: str) -> int | float | None:
    """The number a parameter's text spells, or None: "20" → 20, "20.0" → 20,
    "2.5" → 2.5. One rule for filtering (?param.clients=20) and for grouping
    (the comparisons), so that a filter finds exactly what a group counts."""
    if not _NUMBER.fullmatch(raw):
        return None
    number = float(raw)
    if not math.isfinite(number):
        return None
    if number.is_integer() and abs(number) < 2**63:
        return int(number)
    return number


def parameter_canonical(raw: Any) -> Any:
    """A stored parameter value as one point: the number 20, 20.0 and the
    text "20" are the number 20, exactly the values ?param.clients=20 finds
    (only the canonical spelling of a number counts as one, so the text
    "20.0", " 20" or "٢٠" stays text). Other values are returned as they are."""
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer() and abs(raw) < 2**63:
        return int(raw)
    if isinstance(raw, str):
        number = parameter_number(raw)
        if number is not None and str(number) == raw:
            return number
    return raw


def parameter_query_value(raw: str) -> Any:
    """What ?param.<name>=<raw> names, as a stored point value: any spelling
    of a number is that number ("20.0" → 20), "true"/"false" a boolean."""
    number = parameter_number(raw)
    if number is not None:
        return number
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw


def _json_value_q(field: str, raw: str) -> Q:
    """Parameters are JSON: ?param.clients=20 must match the number 20 and
    the string "20" alike. ``field`` ends in an explicit ``__exact``, so
    that a parameter named like a lookup ("isnull", "in") is a key."""
    q = Q(**{field: raw})
    number = parameter_number(raw)
    if number is not None:
        # the number, and the text that spells it the canonical way ("20", "2.5")
        q |= Q(**{field: number}) | Q(**{field: str(number)})
        if isinstance(number, int):
            q |= Q(**{field: float(number)})
    if raw.lower() in ("true", "false"):
        q |= Q(**{field: raw.lower() == "true"})
    return q


def _version_q(prefix: str, key: str, bound: str, lookup: str) -> Q:
    sort_text = version_sort_text(bound)
    if not sort_text:
        raise ValidationError({key: f"{bound!r} is not a version number"})
    return Q(**{f"{prefix}server__version_sort__{lookup}": sort_text})


def _noise_q(column: str, key: str, value: str) -> Q:
    """noise=quiet: runs without a flag; noise=<flag>: runs with that flag."""
    if value == QUIET:
        return Q(**{column: ""})
    if value not in NOISE_FLAGS:
        raise ValidationError({key: f"{value!r}: one of {QUIET}, {', '.join(NOISE_FLAGS)}"})
    return _in_comma_set(column, value)


def _in_comma_set(column: str, item: str) -> Q:
    """``item`` is one of the comma-joined values stored in ``column``."""
    return (
        Q(**{column: item})
        | Q(**{f"{column}__startswith": item + ","})
        | Q(**{f"{column}__endswith": "," + item})
        | Q(**{f"{column}__contains": "," + item + ","})
    )


class ParameterFilterSet(django_filters.FilterSet):
    """Adds param.* / run_param.* / version bounds / mount_option on top of
    the declared filters. ``run_prefix`` is the path from the model to Run."""

    run_prefix = ""
    measurement_params = False

    def get_form_class(self) -> type:
        """django-filter builds a new form class for every request, each of its
        fields made anew from its filter (labels and all); here one per
        FilterSet class, built once: no filter's field depends on the request,
        and each form still gets its own copies of the fields (Django's forms
        copy them). Saves ~0.6 ms of every filtered request (~40 % of the filtering)."""
        cls = type(self)
        form_class = cls.__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            cls._form_class = form_class
        return form_class

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        for key in self.data:
            if any("\x00" in value for value in self._values(key)):
                raise ValidationError({key: "a null character is not allowed"})
        unknown = [key for key in self.data if not self._known(key)]
        if unknown:
            # A typo must not silently return everything.
            raise ValidationError(
                {key: "unknown filter; see /api/docs/ for the list" for key in unknown}
            )
        # django-filter reads a declared filter's last value only:
        # engine=postgresql&engine=mariadb answered MariaDB's runs alone.
        repeated = [key for key in self.data if key in self.filters and len(self._values(key)) > 1]
        if repeated:
            raise ValidationError(
                {key: "given more than once; this filter takes one value" for key in repeated}
            )
        queryset = super().filter_queryset(queryset)
        p = self.run_prefix
        for key in self.data:
            for value in self._values(key):
                queryset = self._extra(queryset, p, key, value)
        return queryset

    @classmethod
    def empty_hint(cls, key: str) -> str:
        """How to ask for the empty value of ``key``, if it has one
        (benchhub.lib.ordering.refuse_empty_parameters)."""
        if key.startswith(("param.", "run_param.")) or (key in RUN_FIELDS and can_be_empty(key)):
            return f"; {EMPTY_SHOWN} selects the empty value"
        return ""

    def filter_metric(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """A metric of the catalog; of the filtered benchmark when there is one."""
        metric = closed_value("metric", value, self.data.get("benchmark", ""))
        return queryset.filter(metric__name=metric)

    def _values(self, key: str) -> list[str]:
        """Every value given for ``key`` (param.* may repeat)."""
        return self.data.getlist(key) if hasattr(self.data, "getlist") else [self.data[key]]

    def _known(self, key: str) -> bool:
        return (
            key in self.filters
            or key in NON_FILTER_PARAMETERS
            or key in ("mount_option", "version_min", "version_max", "noise")
            or key.startswith(("param.", "run_param."))
        )

    def _extra(self, queryset: QuerySet, p: str, key: str, value: str) -> QuerySet:
        if key.startswith(("param.", "run_param.")):
            scope, _, name = key.partition(".")
            if not PARAM_NAME.match(name):
                raise ValidationError({key: f"{name!r} is not a parameter name"})
            if scope == "param" and not self.measurement_params:
                raise ValidationError({key: "runs have no point parameters; use run_param."})
            field = f"parameters__{name}" if scope == "param" else f"{p}parameters__{name}"
            field += "__exact"
            if means_empty(value):  # the empty text, as a "(none)" series shows it
                return queryset.filter(**{field: ""})
            return queryset.filter(_json_value_q(field, value))
        if key == "mount_option":
            # One option out of the stored comma-joined set.
            option = normalize_mount_options(value)
            if not option and mount_option_is_irrelevant(value.strip().lower()):
                # it would mean "mounted without options", which rw is not
                raise ValidationError(
                    {
                        key: f"{value.strip()!r} does not affect performance: stored mount "
                        "options leave it out, so it cannot filter (see /api/docs/)"
                    }
                )
            column = f"{p}storage__mount_options"
            return queryset.filter(_in_comma_set(column, option))
        if key == "noise":
            return queryset.filter(_noise_q(f"{p}noise", key, value))
        if key == "version_min":
            return queryset.filter(_version_q(p, key, value, "gte"))
        if key == "version_max":
            return queryset.filter(_version_q(p, key, value, "lte"))
        return queryset


def filterset_with_run_fields(
    model: type, run_prefix: str, **extra: object
) -> type[ParameterFilterSet]:
    """A FilterSet with one filter per RUN_FIELDS entry, reached from
    ``model`` through ``run_prefix``."""
    attrs: dict[str, object] = {
        name: _filter(name, run_prefix + path, lookup)
        for name, (path, lookup) in RUN_FIELDS.items()
    }
    attrs.update(extra)
    attrs["run_prefix"] = run_prefix
    attrs["Meta"] = type("Meta", (), {"model": model, "fields": []})
    # Built with type() so that FilterSetMetaclass collects the filters.
    return type(f"{model.__name__}Filter", (ParameterFilterSet,), attrs)


def measurement_filterset(
    model: type, run_prefix: str, **extra: object
) -> type[ParameterFilterSet]:
    """The measurement filters (the run's, the metric, approximate, param.*)
    on ``model``: measurements, or comparisons' packs (their copies of the
    run's fields, ``run_``)."""
    return filterset_with_run_fields(
        model,
        run_prefix,
        metric=django_filters.CharFilter(method="filter_metric"),
        approximate=FlagFilter(field_name="approximate"),
        measurement_params=True,
        **extra,
    )


RunFilter = filterset_with_run_fields(Run, "")
MeasurementFilter = measurement_filterset(
    Measurement, "run__", run=WholeNumberFilter(field_name="run_id")
)
