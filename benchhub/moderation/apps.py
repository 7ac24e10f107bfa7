from django.apps import AppConfig


class ModerationConfig(AppConfig):
    """Review of submissions (one service for every change of status, with
    an audit log) and curation of dimension values (alias rules)."""

    name = "benchhub.moderation"
