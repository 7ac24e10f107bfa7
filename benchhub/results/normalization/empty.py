"""How every page, chart and message shows an empty value of any axis (no
filesystem given, no mount options, a parameter's empty text), and the one
rule that reads it back: as a filter or a reference, "(none)" is that empty
value, on every axis that can be empty."""

EMPTY_SHOWN = "(none)"


def means_empty(text: str) -> bool:
    """Whether ``text``, as given in a query string, names the empty value
    (any letter case: the filters are case-insensitive)."""
    return text.strip().casefold() == EMPTY_SHOWN
