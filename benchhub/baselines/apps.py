from django.apps import AppConfig


class BaselinesConfig(AppConfig):
    """Community baselines: per comparability key, metric and point, the
    distribution of approved results, computed by Celery workers."""

    name = "benchhub.baselines"

    def ready(self) -> None:
        from benchhub.baselines import services  # connects the run-deleted receiver
        from benchhub.baselines.marking import mark_inserted_runs_sql, queue_needed
        from benchhub.results import events

        events.register(
            marks_sql=mark_inserted_runs_sql,
            marked=lambda rows, now: services.baselines_runs_marked(queue=queue_needed(rows, now)),
            runs_stored=lambda runs: services.baselines_mark_dirty(runs=runs),
        )
