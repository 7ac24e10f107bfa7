from django.core.management.base import BaseCommand

from benchhub.studies.services import seed_studies_load


class Command(BaseCommand):
    help = "Make the seed articles' studies from their curated data (after load_articles)."

    def handle(self, *args, **options):
        for study in seed_studies_load():
            self.stdout.write(f"study: {study.title}")
