"""The worker keeps the answers people ask for current: after the data of a
kept answer changed (an approval, a deletion, an alias rule …), the next
visitor would wait for the whole computation (a second and more at ten
million measurements); the refresh computes it first.

Bounded: the answers served within ``SERVED_WITHIN`` seconds, last served
first, at most ``LIMIT`` and ``SECONDS`` per run. Queued two seconds
after a moderation (a trusted upload's approval on arrival included) or an
alias rule's renaming changed the public data (services.py), and run by
beat every ``BENCHHUB_COMPARISON_REFRESH_SECONDS`` for every other change
(a row deleted in the admin, a catalog edit). Without a worker (the
embedded default runs tasks in the request) nothing is refreshed and a
stale answer is simply computed on request.

It also builds a metric's measurement packs when a comparison asks for them
(``packs_build_task``, packs.py).
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings
from django.db import connection

from benchhub.comparisons.kept import kept_answer_forget_if_changed, kept_answers_stale, refreshing
from benchhub.comparisons.packs import packs_build, packs_build_ask_clear, packs_current
from benchhub.comparisons.selectors import comparison_answer_refresh

logger = logging.getLogger(__name__)

SERVED_WITHIN = 3600
LIMIT = 20
SECONDS = 20.0


@shared_task
def comparisons_refresh_task() -> int:
    """Compute again the kept answers whose data changed; how many were."""
    if not settings.BENCHHUB_COMPARISON_KEEP_SECONDS:
        return 0
    deadline = time.monotonic() + SECONDS
    refreshed = 0
    for key, request, served_at in kept_answers_stale(served_within=SERVED_WITHIN, limit=LIMIT):
        if time.monotonic() > deadline:
            break
        # Computed again under its key, the stale answer is replaced; visitors
        # are served it meanwhile (within the grace). Under another key (an
        # alias rule changed the filter's statement), it goes after.
        with refreshing(served_at):
            if comparison_answer_refresh(request):
                refreshed += 1
        kept_answer_forget_if_changed(key)
    if refreshed:
        logger.info("comparisons: %d kept answers computed again", refreshed)
    return refreshed


@shared_task
def packs_build_task(metric_id: int) -> int:
    """Build a metric's measurement packs (packs.py), asked for by the first
    comparison that found them out of date; how many (0: none needed)."""
    if connection.vendor != "postgresql":
        return 0
    try:
        if packs_current(metric_id):  # asked for twice, built once
            return 0
        return packs_build(metric_id)
    finally:
        packs_build_ask_clear(metric_id)
