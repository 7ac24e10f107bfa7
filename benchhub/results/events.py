"""Where the apps built on results plug into it.

results is the core app: it imports no other BenchHub app. Two apps take
part in storing a submission, and register their part here from their
AppConfig.ready():

- moderation: the alias rules applied to dimension values ("openzfs" is
  "zfs"), what happens to a new submission on arrival (a trusted
  submitter's is approved, through moderation's audit log), and which
  submissions its queue holds;
- baselines: marking the comparability keys whose baselines must be
  recomputed, inside the statement that stores the runs on PostgreSQL.

These are hooks with defaults rather than Django signals because the upload
needs answers from them (the rules, a SQL fragment), not only a
notification. Each default is what an upload does without that app, so
results works, and is tested, on its own.

Notifications are Django signals: ``public_data_changed`` is sent when what
the public sees of the results changed: an approved result stored, a status
to or from approved, an alias rule that rewrote stored values. Its
``metrics`` are the ids of the metrics whose measurements changed, or None
for what every metric's results share (dimension rows, users). Comparisons'
kept answers listen to it; a row saved or deleted one at a time through the
ORM is told by Django's own model signals, so only a bulk write
(``QuerySet.update()``, raw SQL) needs to send it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.dispatch import Signal

# The CTE the one-statement insert reads the marks from (storage.py): empty
# when no app marks anything.
NO_MARKS_SQL = (
    "dirty_key AS (SELECT NULL::boolean AS inserted, NULL::timestamptz AS claimed_at WHERE false)"
)


@dataclass
class Hooks:
    # Alias rules, {(dimension, field): {spelling: canonical}}: read once per
    # upload, then applied to each dimension row's values (dimension key,
    # values, rules) -> values; filters read them too.
    alias_rules: Callable[[], Any] = lambda: {}
    alias_apply: Callable[[str, dict[str, Any], Any], dict[str, Any]] = (
        lambda dimension, values, rules: values
    )
    # Whether a new submission has something to do on arrival; if so it is
    # stored in a transaction that also runs arrived(submission).
    moderated_on_arrival: Callable[[Any], bool] = lambda submission: False
    arrived: Callable[[Any], None] = lambda submission: None
    # PostgreSQL: the CTE ``dirty_key`` (columns inserted, claimed_at) that
    # marks the runs of the CTE it is given; then marked(rows, now) with its
    # rows. Elsewhere runs_stored([(run id, comparability key), ...]).
    marks_sql: Callable[[str], str] = lambda runs: NO_MARKS_SQL
    marked: Callable[[list[tuple[bool, dt.datetime | None]], dt.datetime], None] = (
        lambda rows, now: None
    )
    runs_stored: Callable[[list[tuple[int, str]]], None] = lambda runs: None
    # The submissions a moderator's list of ``states`` shows (None: what
    # waits for a decision), as a filter on Submission.
    moderation_queue: Callable[[list[str] | None], Q] = lambda states: Q(
        status__in=states or ("pending", "flagged")
    )


hooks = Hooks()

# Sent inside the transaction that made the change (or after the statement
# that committed it), with ``metrics``: an iterable of metric ids, or None.
# Receivers that act on it defer their work to transaction.on_commit.
public_data_changed = Signal()


def register(**named: Callable[..., Any]) -> None:
    """Set hooks by name; an unknown name is a programming error."""
    for name, hook in named.items():
        if not hasattr(hooks, name):
            raise TypeError(f"no results hook named {name!r}")
        setattr(hooks, name, hook)
