from celery import shared_task
from celery.signals import worker_ready

from benchhub.baselines.refresh import BATCH, baselines_mark_all, baselines_refresh


# acks_late: the task is idempotent (it recomputes from the data and clears
# only the marks it saw), so a worker dying mid-task leaves the message for
# the next one to redo.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def baselines_refresh_task(batch: int = BATCH) -> None:
    _, remaining = baselines_refresh(limit=batch)
    # Marks still unclaimed: more than a batch, or keys re-marked while we
    # computed. Keys another worker holds are not counted: it finishes them.
    # In-process (the embedded default runs tasks eagerly, inside the
    # upload's request) one bounded batch is all: the next upload takes
    # the next one, and a request never loops.
    request = baselines_refresh_task.request
    if remaining and not request.is_eager:
        # On the queue this one came from (a deployment may route it).
        queue = (request.delivery_info or {}).get("routing_key")
        baselines_refresh_task.apply_async(kwargs={"batch": batch}, queue=queue)


@shared_task
def baselines_recompute_all_task() -> None:
    """Nightly (CELERY_BEAT_SCHEDULE): every key again, in the refresh's batches."""
    if baselines_mark_all():
        baselines_refresh_task.delay()


@worker_ready.connect
def _pick_up_abandoned_claims(sender, **kwargs) -> None:
    """A worker that starts takes over what a dead one left (marks and
    claims older than CLAIM_EXPIRY), without waiting for beat's sweep or
    for the next upload to queue a refresh. Queued to the first queue
    this worker consumes, so that it is this worker's to do."""
    queues = getattr(getattr(sender, "task_consumer", None), "queues", None) or []
    baselines_refresh_task.apply_async(queue=queues[0].name if queues else None)
