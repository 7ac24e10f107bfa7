from django.apps import AppConfig


class StudiesConfig(AppConfig):
    """A study: runs that answer one question together — one benchmark, one or
    two factors varied (a filesystem, a mount option, a configuration …),
    everything else held — shown as the seed articles showed theirs, relative
    to a reference = 100, with a citable URL."""

    name = "benchhub.studies"
