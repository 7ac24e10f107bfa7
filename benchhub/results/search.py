"""The results search box: "postgresql 15 ext4 epyc" read as a person means it.

Each word that names a value of a facet (an engine, a version of it, a
filesystem, a mount option, an I/O scheduler, an operating system, a CPU
vendor, a protocol, a benchmark, a load engine, a submitter) becomes that
facet's filter, with the same meaning as the filter in the URL; the other
words are searched as text in the CPU model, operating system and version.
The reading is shown as chips, each with the link that drops its word, and
a search that matches nothing says which word matched what.

Only the values of runs the reader may see are recognised, so a word never
reveals a value of someone's pending upload.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.http import QueryDict

from benchhub.results.filters import RunFilter, known_values
from benchhub.results.models import Run
from benchhub.results.selectors import run_search

MAX_WORDS = 10

# Spellings people type for an engine the catalog names otherwise.
ENGINE_WORDS = {"postgres": "postgresql", "pg": "postgresql", "pgsql": "postgresql"}

VERSION_WORD = re.compile(r"^v?(\d+(?:\.\d+){0,3})$")

# Facets whose values are a closed list (the upload schema's and the catalog's), in the
# order a word is tried against them.
CLOSED = ("engine", "benchmark", "protocol", "storage_kind", "os_family", "cpu_placement")

# Facets whose values are whatever the visible runs hold: (filter, column on Run).
OPEN = (
    ("filesystem", "storage__filesystem"),
    ("io_scheduler", "storage__io_scheduler"),
    ("os_distribution", "os__distribution"),
    ("cpu_vendor", "hardware__cpu_vendor"),
    ("load_engine", "client__load_engine"),
)

LABELS = {
    "engine": "engine",
    "benchmark": "benchmark",
    "protocol": "protocol",
    "storage_kind": "storage",
    "os_family": "OS family",
    "cpu_placement": "CPU placement",
    "filesystem": "filesystem",
    "mount_option": "mount option",
    "io_scheduler": "I/O scheduler",
    "os_distribution": "OS",
    "cpu_vendor": "CPU vendor",
    "load_engine": "load engine",
    "submitter": "submitter",
    "version_major": "version",
    "version": "version",
    "version_range": "version",
    "text": "CPU, OS or version text",
}

WHAT_A_WORD_CAN_BE = (
    "an engine, version, filesystem, mount option, I/O scheduler, operating system, "
    "CPU, protocol, benchmark, load engine or submitter"
)


@dataclass(frozen=True)
class Term:
    """How one word of the search was read."""

    word: str
    facet: str  # a key of LABELS
    value: str
    drop_url: str = ""  # the search without this word

    @property
    def label(self) -> str:
        return f"{LABELS[self.facet]}: {self.value}"

    def filters(self) -> list[tuple[str, str]]:
        """The URL filters this word stands for."""
        if self.facet == "version_range":
            return [("version_min", self.value), ("version_max", f"{self.value}.99999.99999")]
        if self.facet == "text":
            return []
        return [(self.facet, self.value)]


@dataclass
class Search:
    terms: list[Term] = field(default_factory=list)
    known: str = ""  # a few values the visible runs hold, for a word that matched nothing

    @property
    def free_words(self) -> list[str]:
        return [term.word for term in self.terms if term.facet == "text"]


@dataclass
class _Vocabulary:
    """Lower-cased value → the value as stored, per facet, for the visible runs."""

    by_facet: dict[str, dict[str, str]]
    mount_options: dict[str, str]
    majors: dict[str, set[str]]  # engine → its version majors
    versions: dict[str, set[str]]  # engine → its full versions


def _vocabulary(runs: QuerySet[Run]) -> _Vocabulary:
    """One query: the distinct combinations of the open facets' columns over the runs."""
    by_facet: dict[str, dict[str, str]] = {}
    for name in CLOSED:
        by_facet[name] = {value.lower(): value for value in known_values(name) or []}
    for name, _ in OPEN:
        by_facet[name] = {}
    options: dict[str, str] = {}
    majors: dict[str, set[str]] = defaultdict(set)
    versions: dict[str, set[str]] = defaultdict(set)
    columns = [column for _, column in OPEN]
    extra = ("storage__mount_options", "server__engine", "server__version_major", "server__version")
    for row in runs.values_list(*columns, *extra).distinct():
        for (name, _), value in zip(OPEN, row, strict=False):
            if value:
                by_facet[name][value.lower()] = value
        stored_options, engine, major, version = row[len(OPEN) :]
        for option in filter(None, (stored_options or "").split(",")):
            options[option.lower()] = option
        majors[engine].add(major)
        versions[engine].add(version)
    return _Vocabulary(by_facet, options, majors, versions)


def _version_term(word: str, engine: str | None, vocabulary: _Vocabulary) -> Term | None:
    """A number read as a version: a major that exists (15, 10.11), a prefix of
    majors that exist (11 for 11.4 and 11.8), or a whole version (15.4)."""
    match = VERSION_WORD.match(word)
    if not match:
        return None
    number = match.group(1)
    engines = [engine] if engine else list(vocabulary.majors)
    majors = {major for e in engines for major in vocabulary.majors.get(e, ())}
    if number in majors:
        return Term(word, "version_major", number)
    if any(major.startswith(number + ".") for major in majors):
        return Term(word, "version_range", number)
    if number in {v for e in engines for v in vocabulary.versions.get(e, ())}:
        return Term(word, "version", number)
    return None


def _read_word(word: str, engine: str | None, vocabulary: _Vocabulary, runs: QuerySet[Run]) -> Term:
    lowered = word.lower()
    lowered = ENGINE_WORDS.get(lowered, lowered)
    for facet, values in vocabulary.by_facet.items():
        if lowered in values:
            return Term(word, facet, values[lowered])
    if lowered in vocabulary.mount_options:
        return Term(word, "mount_option", vocabulary.mount_options[lowered])
    version = _version_term(lowered, engine, vocabulary)
    if version is not None:
        return version
    submitter = (
        runs.filter(submission__submitter__username__iexact=word)
        .values_list("submission__submitter__username", flat=True)
        .first()
    )
    if submitter:
        return Term(word, "submitter", submitter)
    return Term(word, "text", word)


def search_read(text: str, *, runs: QuerySet[Run], given: QueryDict) -> Search:
    """How each word of ``text`` is read, against the values of ``runs``. A
    version number belongs to the engine named before it, in the search or
    in the URL's filters."""
    words = text.split()[:MAX_WORDS]
    if not words:
        return Search()
    vocabulary = _vocabulary(runs)
    engine = given.get("engine") or None
    terms = []
    for word in words:
        term = _read_word(word, engine, vocabulary, runs)
        if term.facet == "engine":
            engine = term.value
        terms.append(term)
    return Search(terms, _known_values(vocabulary))


def _known_values(vocabulary: _Vocabulary) -> str:
    shown = (
        ("engines", sorted(vocabulary.majors)),
        ("filesystems", sorted(vocabulary.by_facet["filesystem"].values())),
        ("operating systems", sorted(vocabulary.by_facet["os_distribution"].values())),
    )
    return "; ".join(f"{label}: {', '.join(values)}" for label, values in shown if values)


def search_apply(runs: QuerySet[Run], search: Search) -> QuerySet[Run]:
    """``runs`` narrowed by every term: words for one facet widen each other
    (ext4 xfs: either filesystem), different facets narrow (ext4 postgresql:
    both). The other words are searched as text."""
    by_facet: dict[str, list[Term]] = defaultdict(list)
    for term in search.terms:
        if term.facet != "text":
            by_facet[term.facet].append(term)
    for terms in by_facet.values():
        either = Q()
        for term in terms:
            either |= Q(pk__in=_filtered(Run.objects.all(), term.filters()).values("pk"))
        runs = runs.filter(either)
    if search.free_words:
        runs = run_search(runs, " ".join(search.free_words))
    return runs


def _filtered(runs: QuerySet[Run], pairs: Iterable[tuple[str, str]]) -> QuerySet[Run]:
    data = QueryDict(mutable=True)
    for key, value in pairs:
        data.appendlist(key, value)
    return RunFilter(data=data, queryset=runs).qs


def search_explained(runs: QuerySet[Run], search: Search) -> list[str]:
    """Why a search found nothing: each word's own count among ``runs`` (the
    runs the URL's filters leave), and what a word matching nothing could be."""
    reasons = []
    for term in search.terms:
        alone = search_apply(runs, Search([term])).count()
        if term.facet == "text" and not alone:
            reasons.append(
                f"“{term.word}” matches nothing: it is not {WHAT_A_WORD_CAN_BE} of any "
                "run shown here, nor part of a CPU model, operating system or version"
                + (f" (known here: {search.known})" if search.known else "")
            )
        else:
            reasons.append(
                f"“{term.word}” ({term.label}) alone matches {alone} run{'s' * (alone != 1)}"
            )
    return reasons
