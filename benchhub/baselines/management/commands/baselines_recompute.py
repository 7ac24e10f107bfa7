"""Rebuild every baseline from its data, in the foreground: what the nightly
task does on a worker, for the embedded default (no worker) after an upgrade."""

from django.core.management.base import BaseCommand

from benchhub.baselines.marking import baselines_mark_all
from benchhub.baselines.refresh import baselines_refresh


class Command(BaseCommand):
    help = "Recompute every baseline from its data (the nightly rebuild, in the foreground)."

    def handle(self, *args, **options) -> None:
        keys = baselines_mark_all()
        while baselines_refresh(limit=1)[1]:
            pass
        self.stdout.write(f"{keys} keys rebuilt")
