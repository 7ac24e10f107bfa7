"""A Celery worker inside the test process, on the real Redis broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from celery.contrib.testing.worker import start_worker

from benchhub.celery import app


@contextmanager
def in_process_worker(queue: str | None = None) -> Iterator[None]:
    """A solo worker consuming ``queue`` (the default queue when None).

    The queue is always named: a worker started with ``queues=`` narrows the
    app's own set of queues to consume, and that choice outlives the worker,
    so a later worker started without one would consume only the earlier
    test's private queue and never see the tasks an upload queues. For the
    same reason the default queue is selected again after it: the app's
    purge (``app.control.purge()``) empties the selected queues only, and
    after a private queue's worker it left the run's default queue full."""
    try:
        with start_worker(
            app,
            pool="solo",
            perform_ping_check=False,
            shutdown_timeout=10,
            queues=[queue or app.conf.task_default_queue],
        ):
            yield
    finally:
        app.amqp.queues.select([app.conf.task_default_queue])
