from django.apps import AppConfig


class ComparisonsConfig(AppConfig):
    """Comparisons addressed by their URL alone: one metric of one benchmark,
    what varies, what is fixed, a reference; a page and a REST endpoint that
    answer the same numbers."""

    name = "benchhub.comparisons"
