from celery import shared_task

from benchhub.baselines.services import baselines_refresh

BATCH = 100


# acks_late: the task is idempotent (it recomputes from the data and clears
# only the marks it saw), so a worker dying mid-task leaves the message for
# the next one to redo.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def baselines_refresh_task() -> None:
    _, remaining = baselines_refresh(limit=BATCH)
    # Marks still unclaimed: more than a batch, or keys re-marked while we
    # computed. Keys another worker holds are not counted: it finishes them.
    if remaining:
        baselines_refresh_task.delay()
