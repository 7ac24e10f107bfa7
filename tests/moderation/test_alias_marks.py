"""An alias rule's stored rows follow whichever task runs next: the rule change marks
its field in PostgreSQL, and the mark stays until a task has done the field, so that
a rule added while the broker fails is applied by beat's sweep or a starting worker
(with a real Redis refusing writes: tests/deploy/test_faults.py)."""

from __future__ import annotations

import pytest
from kombu.exceptions import OperationalError as BrokerFailed

from benchhub.baselines.models import DirtyKey
from benchhub.moderation import services
from benchhub.moderation.models import AliasMark, AliasRule, AuditEntry
from benchhub.moderation.services import alias_rule_add, alias_rules_apply
from benchhub.moderation.tasks import alias_rules_apply_task
from benchhub.results.models import Hardware, Submission
from tests.moderation.conftest import upload

XEON = {"cpu": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "cores": 14}
XEON_OTHER_SPELLING = {"cpu": "Intel Xeon E5-2680v4", "cores": 14}


@pytest.fixture
def broker_failing(monkeypatch):
    def refused(*args, **kwargs):
        raise BrokerFailed("OOM command not allowed when used memory > 'maxmemory'.")

    monkeypatch.setattr(alias_rules_apply_task, "apply_async", refused)


def add_rule(maud, django_capture_on_commit_callbacks, source: str, target: str) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        alias_rule_add(
            actor=maud,
            dimension="hardware",
            field="cpu_model",
            from_value=source,
            to_value=target,
        )


def cpu_models() -> set[str]:
    return set(Hardware.objects.values_list("cpu_model", flat=True))


def test_a_rule_added_while_the_broker_fails_is_applied_by_the_next_task_once(
    bob, maud, broker_failing, django_capture_on_commit_callbacks
):
    upload(bob, 1000.0, status=Submission.Status.APPROVED, hardware=XEON)
    upload(bob, 1200.0, status=Submission.Status.APPROVED, hardware=XEON_OTHER_SPELLING)
    DirtyKey.objects.all().delete()  # the uploads' refresh, done

    add_rule(maud, django_capture_on_commit_callbacks, "Xeon E5-2680v4", "Xeon E5-2680 v4")

    # Answered, committed, and the stored rows not yet rewritten: the task was not queued.
    assert cpu_models() == {"Xeon E5-2680 v4", "Xeon E5-2680v4"}
    assert list(AliasMark.objects.values_list("dimension", "field", "done_to_id")) == [
        ("hardware", "cpu_model", 0)
    ]

    alias_rules_apply_task.run()  # what beat's sweep and a starting worker queue

    assert cpu_models() == {"Xeon E5-2680 v4"}
    assert not AliasMark.objects.exists()
    assert DirtyKey.objects.count() == 1  # the run on the rewritten row: its key

    # The rule change's own task, arriving late, or the next sweep: nothing left to do.
    DirtyKey.objects.all().delete()
    alias_rules_apply_task.run()
    assert not AliasMark.objects.exists()
    assert not DirtyKey.objects.exists()  # no row changed again
    assert cpu_models() == {"Xeon E5-2680 v4"}


def test_a_rule_change_between_batches_starts_its_field_again(
    bob, maud, broker_failing, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(services, "ALIAS_BATCH", 1)
    upload(bob, 1000.0, hardware=XEON_OTHER_SPELLING)
    upload(bob, 1100.0, hardware={"cpu": "Intel Xeon E5-2690v4", "cores": 14})
    first, second = Hardware.objects.order_by("pk").values_list("pk", flat=True)
    add_rule(maud, django_capture_on_commit_callbacks, "Xeon E5-2680v4", "Xeon E5-2680 v4")

    assert alias_rules_apply() is True  # one row of the two, the mark moved past it
    assert AliasMark.objects.get().done_to_id == first
    add_rule(maud, django_capture_on_commit_callbacks, "Xeon E5-2690v4", "Xeon E5-2690 v4")
    assert AliasMark.objects.get().done_to_id == 0  # the rows done so far knew one rule

    rounds = 1
    while alias_rules_apply():
        rounds += 1
    assert rounds == 1 + 2  # both rows again after the second rule, then the end
    assert not AliasMark.objects.exists()
    assert dict(Hardware.objects.values_list("pk", "cpu_model")) == {
        first: "Xeon E5-2680 v4",
        second: "Xeon E5-2690 v4",
    }


def test_a_rule_for_a_value_aliased_meanwhile_is_refused_and_nothing_is_stored(maud, monkeypatch):
    """Two moderators adding a rule for one value at once both passed the
    check; the second insert's unique violation was a 500."""
    create = AliasRule.objects.create

    def create_second(**fields):
        AliasRule.objects.bulk_create([AliasRule(**fields)])  # the other moderator's, meanwhile
        return create(**fields)

    monkeypatch.setattr(AliasRule.objects, "create", create_second)
    with pytest.raises(services.AliasRuleError, match="already has an alias; remove it first"):
        alias_rule_add(
            actor=maud,
            dimension="hardware",
            field="cpu_model",
            from_value=XEON_OTHER_SPELLING["cpu"],
            to_value=XEON["cpu"],
        )

    assert not AuditEntry.objects.filter(action="alias_add").exists()
