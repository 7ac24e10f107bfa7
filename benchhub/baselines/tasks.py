from celery import shared_task

from benchhub.baselines.services import baselines_refresh

BATCH = 100


# acks_late: the task is idempotent (it recomputes from the data and clears
# only the marks it saw), so a worker dying mid-task leaves the message for
# the next one to redo.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def baselines_refresh_task() -> None:
    done, remaining = baselines_refresh(limit=BATCH)
    # Keys another worker holds count as remaining; that worker finishes
    # them, so only a full batch means there may be more for us.
    if done == BATCH and remaining:
        baselines_refresh_task.delay()
