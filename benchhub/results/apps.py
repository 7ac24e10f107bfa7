from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_catalog(sender, **kwargs) -> None:
    from benchhub.results.services import catalog_sync

    catalog_sync()


class ResultsConfig(AppConfig):
    name = "benchhub.results"

    def ready(self) -> None:
        # The catalog is reference data shipped with the code (the agent
        # package's benchmarks.json); keeping it in step after every migrate
        # means a new metric needs no hand-written data migration.
        post_migrate.connect(_sync_catalog, sender=self)
