"""Two moderators adding alias rules of one field at the same moment, each
on a connection of its own on the real database: the chain rule
(a -> b beside b -> c) is checked under the field's lock, so the second
sees the first once it commits. Before, both checks ran before either
commit and both rules were stored: a chain, which normalization never
follows to its end."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from benchhub.moderation import services
from benchhub.moderation.models import AliasRule
from benchhub.moderation.services import AliasRuleError, alias_rule_add

pytestmark = pytest.mark.django_db(transaction=True)


def add(maud, source: str, target: str) -> AliasRule:
    return alias_rule_add(
        actor=maud, dimension="hardware", field="cpu_model", from_value=source, to_value=target
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("Xeon v4", "Xeon E5-2680 v4"), ("Xeon E5-2680 v4", "Intel Xeon E5-2680 v4")),
        (("Xeon E5-2680 v4", "Intel Xeon E5-2680 v4"), ("Xeon v4", "Xeon E5-2680 v4")),
    ],
    ids=["leading-from-the-first", "leading-to-the-first"],
)
def test_a_chain_added_by_two_moderators_at_once_is_refused(maud, monkeypatch, first, second):
    outcome: list[object] = []

    def second_moderator() -> None:
        try:
            with transaction.atomic():
                outcome.append(add(maud, *second))
        except AliasRuleError as error:
            outcome.append(error)
        finally:
            connections.close_all()

    other = threading.Thread(target=second_moderator)
    changed = services._rules_changed

    def then_the_other_moderator(dimension: str, field: str) -> None:
        changed(dimension, field)
        # The first rule is stored, not committed: the other moderator adds
        # theirs now, and gets as far as it can within a second.
        other.start()
        other.join(1.0)

    monkeypatch.setattr(services, "_rules_changed", then_the_other_moderator)
    with transaction.atomic():
        add(maud, *first)
    monkeypatch.setattr(services, "_rules_changed", changed)
    other.join(30)
    assert not other.is_alive()

    assert len(outcome) == 1 and isinstance(outcome[0], AliasRuleError), outcome
    assert "cannot lead to or from another alias" in str(outcome[0])
    assert list(AliasRule.objects.values_list("from_value", "to_value")) == [first]


def test_rules_of_another_field_are_not_held_up(maud, monkeypatch):
    """The lock is the field's: a rule of another field goes in meanwhile."""
    done = threading.Event()
    before_the_first_commits: list[bool] = []

    def other_field() -> None:
        try:
            alias_rule_add(
                actor=maud,
                dimension="storage",
                field="filesystem",
                from_value="xfs v5",
                to_value="xfs",
            )
            done.set()
        finally:
            connections.close_all()

    changed = services._rules_changed

    def then_another_field(dimension: str, field: str) -> None:
        changed(dimension, field)
        if dimension != "hardware":
            return  # the other field's own
        other = threading.Thread(target=other_field)
        other.start()
        other.join(5)
        before_the_first_commits.append(done.is_set())

    monkeypatch.setattr(services, "_rules_changed", then_another_field)
    with transaction.atomic():
        add(maud, "Xeon v4", "Xeon E5-2680 v4")
    assert before_the_first_commits == [True]
    assert AliasRule.objects.filter(from_value__in=["Xeon v4", "xfs v5"]).count() == 2
