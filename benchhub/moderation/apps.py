from django.apps import AppConfig


class ModerationConfig(AppConfig):
    """Review of submissions (one service for every change of status, with
    an audit log) and curation of dimension values (alias rules)."""

    name = "benchhub.moderation"

    def ready(self) -> None:
        from benchhub.moderation.aliases import alias_map, aliases_apply
        from benchhub.moderation.selectors import queue_q
        from benchhub.moderation.services import arrival_moderated, submission_arrived
        from benchhub.results import events

        events.register(
            alias_rules=alias_map,
            alias_apply=aliases_apply,
            moderated_on_arrival=lambda submission: arrival_moderated(submission=submission),
            arrived=lambda submission: submission_arrived(submission=submission),
            moderation_queue=queue_q,
        )
