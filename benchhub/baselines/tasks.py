import logging
import math
import threading
import time
from contextlib import nullcontext

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from benchhub.baselines.marking import baselines_mark_all
from benchhub.baselines.models import DirtyKey
from benchhub.baselines.refresh import BATCH, RUNS_PER_ROUND, baselines_refresh

logger = logging.getLogger(__name__)

# In-process (the embedded default runs tasks eagerly, after the upload's or
# the approval's commit, inside its request) one small round is all: one key,
# a few dirty runs, never a rebuild, never a loop inside the request; what
# it leaves is the waiter's (below), which goes on until no mark is left.
IN_PROCESS_KEYS = 1
IN_PROCESS_RUNS = 20
# A worker's next round waits this long when the last one left work (a hot
# key marked again meanwhile), so that one key's rounds take a share of a
# core, not all of it; the runs marked meanwhile are applied together.
NEXT_ROUND_SECONDS = 1.0
# One in-process round at a time per process (each round is a write to the
# one SQLite file), and at most one waiter for the next: that round starts
# after the commits of the requests that found it waiting, so it takes
# their marks and they return at once. Without the waiter, the last
# uploads of a burst left their marks to a change that might not come.
_in_process_round = threading.Lock()
_next_in_process_round = threading.Lock()
# How long the waiter waits for the running round (one bounded round; the
# time only matters if that round hangs on the database).
IN_PROCESS_WAIT_SECONDS = 30.0
# The waiter's rounds stand for every request that returned to it: their
# marks may be on other keys than the oldest, or more than one round's runs.
# It runs this many rounds (each one key, IN_PROCESS_RUNS runs) back to
# back, then, while marks are left (rebuilds too: the waiter is no
# request), waits out the interval again and goes on, unless another
# waiter took over meanwhile. So every mark is taken within (marks / rounds) times the
# interval however few writes follow it, and a request's own work stays one
# round.
IN_PROCESS_WAITER_ROUNDS = 4
# A waiter whose rounds fail (the database busy past its timeout) tries
# again this many times, a second apart, then leaves the marks to the next
# change or the next start (catch_up_in_process).
IN_PROCESS_WAITER_FAILURES = 3
# A round's fixed cost (its claim, release and a dozen statements, about
# 4 ms of the one process's CPU) was most of its work when uploads came
# faster than rounds: a round every other upload, 1.7 runs each. So a round
# starts no sooner than this after the last one ended, and what comes
# meanwhile is the waiter's: one per interval, taking every run marked in
# it. A quiet site's upload, the first in the interval, runs its round at
# once, inside its request.
IN_PROCESS_ROUND_INTERVAL = 0.1
_last_in_process_round_end = -math.inf  # time.monotonic(); written under _in_process_round


# acks_late: the task is idempotent (each round is one transaction per key,
# and clears only the marks it saw), so a worker dying mid-task leaves the
# message for the next one to redo.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def baselines_refresh_task(batch: int = BATCH) -> None:
    request = baselines_refresh_task.request
    if request.is_eager:
        _in_process_rounds()
        return
    done, remaining = baselines_refresh(limit=batch, runs=RUNS_PER_ROUND)
    # Marks still unclaimed: more than a batch (next round at once), or keys
    # re-marked while we computed (next round in a second). Keys another
    # worker holds are not counted: it finishes them.
    if remaining:
        # On the queue this one came from (a deployment may route it).
        queue = (request.delivery_info or {}).get("routing_key")
        baselines_refresh_task.apply_async(
            kwargs={"batch": batch},
            queue=queue,
            countdown=None if done >= batch else NEXT_ROUND_SECONDS,
        )


def _in_process_rounds() -> None:
    """The eager task's work: one bounded round now, or a waiter for the
    next, or nothing (the waiter there is takes this request's marks)."""
    if _take_the_round_now() and not _run_in_process_rounds(1, rebuild=False):
        return
    # A round running, or marks left beyond this request's round: a waiter's.
    _start_waiter()


def catch_up_in_process() -> None:
    """At the start of a process that runs tasks in-process (the embedded
    default's server): a waiter for the marks a previous process left (it
    stopped before its waiter was done), without waiting for a change."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return
    try:
        left = _claimable_marks()
    except DatabaseError:  # not migrated yet: nothing is marked either
        return
    finally:
        connection.close()
    if left:
        _start_waiter()


def _start_waiter() -> None:
    if not _next_in_process_round.acquire(blocking=False):
        return  # the waiter takes our marks
    # A thread of its own, not this request: the waiter sleeps out the
    # interval, and a request parked for it was one uploader of eight
    # asleep at any moment under load (benchmarks/ingest.py's embedded
    # run: 124 uploads/s instead of 138). It does one bounded task, its
    # rounds, and ends; not a daemon, so that a process exiting lets them
    # finish (a tenth of a second and a round at most).
    try:
        threading.Thread(target=_waiter, name=WAITER_THREAD, daemon=False).start()
    except RuntimeError:  # no thread to be had: the next change's round takes the marks
        _next_in_process_round.release()
        logger.warning("baselines: no thread for the next in-process round; marks kept")


WAITER_THREAD = "baselines-waiter"


def _waiter() -> None:
    """The next round's waiter (holding _next_in_process_round): once the
    running round has ended and the interval is over, IN_PROCESS_WAITER_ROUNDS
    rounds; again while marks are left, unless another waiter took over."""
    failures = 0
    try:
        while True:
            try:
                if not _in_process_round.acquire(timeout=IN_PROCESS_WAIT_SECONDS):
                    logger.warning("baselines: in-process round still running; marks kept")
                    return
                # Still the waiter while it sleeps: requests that come meanwhile
                # return to it, and its rounds start after their commits.
                time.sleep(_rest_of_the_interval())
            finally:
                _next_in_process_round.release()
            left = _run_in_process_rounds(IN_PROCESS_WAITER_ROUNDS, rebuild=True)
            if left is None:
                failures += 1
                if failures >= IN_PROCESS_WAITER_FAILURES:
                    return  # marks kept for the next change or start
                time.sleep(1.0)
            elif not left:
                return
            else:
                failures = 0
            if not _next_in_process_round.acquire(blocking=False):
                return  # a newer waiter takes what is left
    finally:
        connection.close()  # this thread's own, which nothing else would close


def _run_in_process_rounds(rounds: int, *, rebuild: bool) -> int | None:
    """Up to ``rounds`` rounds while marks are left, under _in_process_round
    (held by the caller, released here). How many marks are left for a next
    round (rebuilds included), or None when a round failed."""
    global _last_in_process_round_end
    try:
        for _ in range(rounds):
            # On SQLite each transaction is a turn for the one write lock
            # (lib/sqlite): the round's claim, update and release in one
            # take one turn of about 25 ms instead of three waits in line.
            with transaction.atomic() if connection.vendor == "sqlite" else nullcontext():
                _, remaining = baselines_refresh(
                    limit=IN_PROCESS_KEYS, runs=IN_PROCESS_RUNS, rebuild=rebuild
                )
            if not remaining:
                break
        # A request's round leaves rebuilds alone; they are still marks left.
        return remaining if rebuild else _claimable_marks()
    except DatabaseError:
        # SQLite busy with another request's write, say: the upload or
        # approval is committed and must not fail now; its marks stay
        # for the waiter's next round, the next change or the next start.
        logger.warning("baselines: in-process round skipped", exc_info=True)
        return None
    finally:
        _last_in_process_round_end = time.monotonic()
        _in_process_round.release()


def _claimable_marks() -> int:
    return DirtyKey.objects.filter(claimed_at__isnull=True).count()


def _take_the_round_now() -> bool:
    """Take the in-process round if none is running and the interval since
    the last one is over."""
    if not _in_process_round.acquire(blocking=False):
        return False
    if _rest_of_the_interval() > 0:
        _in_process_round.release()
        return False
    return True


def _rest_of_the_interval() -> float:
    return max(0.0, _last_in_process_round_end + IN_PROCESS_ROUND_INTERVAL - time.monotonic())


@shared_task
def baselines_recompute_all_task() -> None:
    """Nightly (CELERY_BEAT_SCHEDULE): every key rebuilt from its data, in
    the refresh's batches."""
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
