from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    """What changed between two releases of a database server, read only from
    machines that ran both: a release change is never confused with a
    machine change. Reads results; owns no table."""

    name = "benchhub.releases"
