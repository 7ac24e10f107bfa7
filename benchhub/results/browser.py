"""The results browser's state: what is filtered, searched, sorted and on
which page, and the links that change one of them. The URL is the whole
state, so every link is built from it (back, forward and sharing work)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse

from benchhub.results.normalization.empty import EMPTY_SHOWN, means_empty
from benchhub.results.selectors import Facet


@dataclass(frozen=True)
class BrowserState:
    filters: QueryDict  # the API filters, as given
    text: str = ""
    sort: str = "newest"
    # /results/, reversed once: a page builds ~150 links from this state.
    base: str = field(default_factory=lambda: reverse("results:browser"))

    def url(
        self, *, set_: dict[str, str] | None = None, drop: tuple[str, ...] = (), page: int = 1
    ) -> str:
        """This state's URL with filters set or dropped, on ``page``."""
        pairs: list[tuple[str, str]] = []
        for key, values in self.filters.lists():
            if key in drop or (set_ and key in set_):
                continue
            pairs.extend((key, value) for value in values)
        for key, value in (set_ or {}).items():
            pairs.append((key, value))
        if self.text:
            pairs.append(("q", self.text))
        if self.sort != "newest":
            pairs.append(("sort", self.sort))
        if page > 1:
            pairs.append(("page", str(page)))
        query = urlencode(pairs)
        return self.base + (f"?{query}" if query else "")

    def feed_url(self) -> str:
        """The Atom feed of the runs this state shows, newest first."""
        pairs = [(key, value) for key, values in self.filters.lists() for value in values]
        if self.text:
            pairs.append(("q", self.text))
        query = urlencode(pairs)
        return reverse("results:feed") + (f"?{query}" if query else "")

    def chosen(self) -> list[tuple[str, str, str]]:
        """(filter, value, URL without it) for every filter set."""
        return [
            (key, value, self.url(drop=(key,)))
            for key, values in self.filters.lists()
            for value in values
        ]

    def is_chosen(self, keys: tuple[str, ...], values: tuple[Any, ...]) -> bool:
        return all(_given(self.filters.getlist(k), v) for k, v in zip(keys, values, strict=True))


def _given(given: list[str], value: Any) -> bool:
    """Whether a filter's values name a facet's ``value``. The facet's empty
    value, "(none)", is named in any letter case, as the filters read it:
    filesystem=(NONE) filtered on it, but its facet was not marked chosen."""
    if value == EMPTY_SHOWN:
        return any(means_empty(text) for text in given)
    return str(value) in given


@dataclass(frozen=True)
class FacetLink:
    value: str
    count: int
    url: str
    chosen: bool


@dataclass(frozen=True)
class FacetLinks:
    name: str
    label: str
    links: list[FacetLink]
    more: int  # values not shown


FACET_VALUES_SHOWN = 12


def facet_links(facet: Facet, state: BrowserState) -> FacetLinks:
    links = []
    for item in facet.values:
        chosen = state.is_chosen(facet.names, item.values)
        if chosen:
            url = state.url(drop=facet.names)
        else:
            pairs = zip(facet.names, item.values, strict=True)
            chosen_values = {name: str(value) for name, value in pairs if value not in ("", None)}
            url = state.url(set_=chosen_values)
        links.append(FacetLink(item.label, item.count, url, chosen))
    shown = [link for link in links if link.chosen] + [link for link in links if not link.chosen]
    return FacetLinks(
        facet.name,
        facet.label,
        shown[:FACET_VALUES_SHOWN],
        max(0, len(links) - FACET_VALUES_SHOWN),
    )


def page_links(page: Any, state: BrowserState) -> dict[str, str]:
    links = {}
    if page.has_previous():
        links["previous"] = state.url(page=page.previous_page_number())
    if page.has_next():
        links["next"] = state.url(page=page.next_page_number())
    return links
