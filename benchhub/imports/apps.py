from django.apps import AppConfig


class ImportsConfig(AppConfig):
    """Bringing existing results in: the seed articles as curated data, and
    other tools' outputs."""

    name = "benchhub.imports"
