from django.core.management.base import BaseCommand, CommandError

from benchhub.imports.services import articles_load
from benchhub.results.services import InvalidDocument


class Command(BaseCommand):
    help = "Load the seed articles' data (benchhub/imports/articles/) as curated submissions."

    def handle(self, *args, **options):
        try:
            loaded = articles_load()
        except InvalidDocument as exc:
            details = "\n".join(f"  {e.path}: {e.message}" for e in exc.errors)
            raise CommandError(f"an article document is invalid:\n{details}") from None
        for item in loaded:
            runs = item.submission.runs.count()
            state = "stored" if item.created else "already there"
            self.stdout.write(f"{item.file}: {state} ({runs} runs)")
