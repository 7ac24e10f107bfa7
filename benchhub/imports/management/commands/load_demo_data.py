from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from benchhub.accounts.services import api_token_create

DEMO_USERNAME = "demo"


class Command(BaseCommand):
    help = (
        "Load the demo data of the embedded default: the seed articles, and a 'demo' user "
        "(password 'demo') with a fresh API token, printed, to try uploads with."
    )

    def handle(self, *args, **options):
        call_command("load_articles", stdout=self.stdout)
        User = get_user_model()
        user, created = User.objects.get_or_create(username=DEMO_USERNAME)
        if created:
            user.set_password("demo")
            user.is_staff = True  # the admin is where moderation starts
            user.is_superuser = True
            user.save()
        _, secret = api_token_create(user=user, name="demo")
        self.stdout.write(
            f"demo user: {DEMO_USERNAME} / password demo — API token for uploads: {secret}"
        )
