from celery import shared_task
from celery.signals import worker_ready

from benchhub.lib.queueing import task_queue
from benchhub.moderation.services import alias_rules_apply, submissions_autoflag


@shared_task
def moderation_autoflag_task() -> None:
    """Periodic (beat): flag what the latest baselines found unusual."""
    submissions_autoflag()


# acks_late: a batch recomputes rows from their raw strings, so redoing it
# after a worker died is harmless.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def alias_rules_apply_task(*_arguments_of_messages_queued_before_marks: object) -> None:
    """One batch of the stored rows of a field whose alias rules changed; the
    next batch queued while marked fields are left. Queued by each rule
    change, by beat (the sweep) and by a starting worker: the first to run
    does the work, the others find it done. (Messages queued before the
    marks named their field; migration 0002 marked every field instead.)"""
    if alias_rules_apply():
        task_queue(alias_rules_apply_task, left_to="the sweep (the marks stay in PostgreSQL)")


@worker_ready.connect
def _pick_up_alias_marks(sender, **kwargs) -> None:
    """A worker that starts does the fields a rule change marked while the
    broker failed, without waiting for beat's sweep (or with no beat at all).
    Queued to the first queue this worker consumes, as the baselines' are."""
    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    alias_rules_apply_task.apply_async(queue=queues[0].name if queues else None)
