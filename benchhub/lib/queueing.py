"""Queueing a Celery task from a request that has done its work.

An upload, an approval or an alias rule commits its data before it queues
the task that follows it up. If the broker (Redis) fails then, the request
must still answer for what it committed: the task is not queued and a warning
names Redis's error; what the task would have done is left to what the caller
keeps in PostgreSQL (the baselines' dirty keys, the alias rules' marked fields),
which beat's sweeps and a starting worker queue again.

Whether Redis is away or answers with an error (OutOfMemoryError at maxmemory,
ReadOnlyError on a replica), kombu retries the publish as Celery's retry policy
says and then raises its OperationalError, caused by redis-py's error.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from kombu.exceptions import OperationalError as BrokerFailed

from benchhub.lib.ratelog import RateLimitedLog

logger = logging.getLogger(__name__)
# One line per task and error every ten seconds while the broker is away.
warnings = RateLimitedLog(logger)


def task_queue(
    task: Task, *args: Any, left_to: str, options: dict[str, Any] | None = None, **kwargs: Any
) -> bool:
    """``task.delay(*args, **kwargs)`` (with apply_async's ``options``, such as
    a countdown); False, with a warning that says what the work is
    ``left_to``, when the broker fails."""
    try:
        task.apply_async(args, kwargs, **(options or {}))
    except BrokerFailed as exc:
        error = exc.__cause__ or exc  # Redis's own error, where kombu wrapped one
        warnings.warning(
            (task.name, type(error).__name__),
            "%s not queued, the broker failed: %s: %s; left to %s",
            task.name.rpartition(".")[2],
            type(error).__name__,
            error,
            left_to,
        )
        return False
    return True
