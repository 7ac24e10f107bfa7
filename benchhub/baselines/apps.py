from django.apps import AppConfig


class BaselinesConfig(AppConfig):
    """Community baselines: per comparability key, metric and point, the
    distribution of approved results, computed by Celery workers."""

    name = "benchhub.baselines"

    def ready(self) -> None:
        from benchhub.baselines import services  # noqa: F401 -- connects the run-deleted receiver
