import json

from django import template

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
