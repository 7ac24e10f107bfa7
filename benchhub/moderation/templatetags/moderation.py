import json

from django import template

from benchhub.moderation.services import TRANSITIONS

register = template.Library()


@register.filter
def compact_json(value) -> str:
    """{"clients": 20} → clients=20, the way filters spell a point."""
    if isinstance(value, dict):
        return (
            ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items()) or "—"
        )
    return json.dumps(value, ensure_ascii=False)


@register.filter
def absolute(value: float) -> float:
    return abs(value)


@register.filter
def allowed_from(actions, status: str) -> list:
    """The actions a submission in ``status`` can take: a reported approved
    result offered "Approve" got only "an approved submission cannot be
    approved" for its click."""
    return [action for action in actions if status in TRANSITIONS[action][0]]
