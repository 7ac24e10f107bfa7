import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Submission
from benchhub.results.services import submission_create

DEMO_USERNAME = "demo"
# A real select-update sweep measured by the agent on the development machine
# (docs/examples/README.md): the articles hold no sweep over clients, this does.
MEASURED_RUN = settings.BASE_DIR / "docs" / "examples" / "select-update-measured-here.json"


class Command(BaseCommand):
    help = (
        "Load the demo data of the embedded default: the seed articles, and a 'demo' user "
        "(password 'demo') with a fresh API token, printed, to try uploads with, and one "
        "select-update sweep the agent measured, submitted by that user."
    )

    def handle(self, *args, **options):
        if not settings.DEBUG:
            # demo/demo is a superuser whose password is in the README: on a
            # site with production settings it would be anyone's admin.
            raise CommandError(
                "load_demo_data creates the superuser 'demo' with the password 'demo', so it "
                "runs only with development settings (DEBUG=true, as `make run` sets); this "
                "site runs with DEBUG off. Load the articles alone with `manage.py load_articles`."
            )
        call_command("load_articles", stdout=self.stdout)
        call_command("load_seed_studies", stdout=self.stdout)
        User = get_user_model()
        user, created = User.objects.get_or_create(username=DEMO_USERNAME)
        if created:
            user.set_password("demo")
            user.is_staff = True  # the admin is where moderation starts
            user.is_superuser = True
            user.save()
        document = json.loads(MEASURED_RUN.read_text("utf-8"))
        outcome = submission_create(
            submitter=user, document=document, status=Submission.Status.APPROVED
        )
        state = "stored" if outcome.created else "already stored"
        self.stdout.write(f"{MEASURED_RUN.name}: {state} as submission {outcome.submission.uuid}")
        _, secret = api_token_create(user=user, name="demo")
        self.stdout.write(
            f"demo user: {DEMO_USERNAME} / password demo — API token for uploads: {secret}"
        )
