from celery import shared_task

from benchhub.moderation.services import alias_rules_apply, submissions_autoflag


@shared_task
def moderation_autoflag_task() -> None:
    """Periodic (beat): flag what the latest baselines found unusual."""
    submissions_autoflag()


# acks_late: a batch recomputes rows from their raw strings, so redoing it
# after a worker died is harmless.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def alias_rules_apply_task(dimension: str, field: str, after_id: int = 0) -> None:
    next_id = alias_rules_apply(dimension=dimension, field=field, after_id=after_id)
    if next_id is not None:
        alias_rules_apply_task.delay(dimension, field, next_id)
