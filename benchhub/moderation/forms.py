from __future__ import annotations

from django import forms

from benchhub.moderation.aliases import ALIASABLE
from benchhub.moderation.models import AuditEntry
from benchhub.results.models import Submission

# In lower case, as the statuses read everywhere else: the labels Django
# makes ("Pending", "Approved" …) stood between "waiting (…)" and "re-run requested".
# Not "deleted": the queue never shows one (moderation.selectors.queue_q).
STATE_CHOICES = [
    ("", "waiting (pending and flagged)"),
    *(
        (value, str(label).lower())
        for value, label in Submission.Status.choices
        if value != Submission.Status.DELETED
    ),
]


class QueueFilterForm(forms.Form):
    state = forms.ChoiceField(choices=STATE_CHOICES, required=False)
    benchmark = forms.CharField(required=False, max_length=40)
    submitter = forms.CharField(required=False, max_length=150)
    page = forms.IntegerField(required=False, min_value=1, max_value=10_000)


# Likewise: "Approve", "Reject" stood beside "request a re-run", "dismiss the reports".
ACTION_CHOICES = [
    ("", "any"),
    *((value, str(label).lower()) for value, label in AuditEntry.Action.choices),
]


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(choices=ACTION_CHOICES, required=False)
    actor = forms.CharField(
        required=False, max_length=150, help_text="a username, or BenchHub for automatic changes"
    )
    submission = forms.UUIDField(required=False)
    page = forms.IntegerField(required=False, min_value=1, max_value=10_000)


class AliasRuleForm(forms.Form):
    target = forms.ChoiceField(
        label="Field",
        choices=[(f"{d}.{f}", spec.label) for (d, f), spec in ALIASABLE.items()],
    )
    from_value = forms.CharField(label="Value", max_length=500)
    to_value = forms.CharField(label="is the same as", max_length=500)
    reason = forms.CharField(required=False, max_length=2000)
