"""Serializer fields more exact than DRF's, shared by the APIs."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers


class TextField(serializers.CharField):
    """Free text that must come as a JSON string: DRF's CharField takes a
    number and stores its str(), so {"reason": 5} was stored as the reason
    "5", and {"output": 5} imported as the tool output "5", which no one
    wrote."""

    default_error_messages = {
        "invalid": "must be a JSON string, not {kind}",
    }

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", kind=_json_kind(data))
        return super().to_internal_value(data)


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__
