from django.apps import AppConfig


class ComparisonsConfig(AppConfig):
    """Comparisons addressed by their URL alone: one metric of one benchmark,
    what varies, what is fixed, a reference; a page and a REST endpoint that
    answer the same numbers."""

    name = "benchhub.comparisons"

    def ready(self) -> None:
        from benchhub.comparisons import changes
        from benchhub.comparisons.services import comparisons_data_changed
        from benchhub.results import events

        changes.connect()
        events.public_data_changed.connect(
            lambda **kwargs: comparisons_data_changed(), weak=False, dispatch_uid="comparisons"
        )
