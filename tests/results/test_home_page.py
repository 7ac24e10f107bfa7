import html
import io
import re
import tomllib

from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document


def test_home_page_explains_and_shows_how_to_run_the_agent(client, db):
    response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "benchhub-agent run select-update" in page
    assert "/api/docs/" in page
    assert "No submissions yet" in page


def test_home_page_lists_approved_submissions_only(client, bob, alice):
    approved = submission_create(
        submitter=bob, document=small_document(), status=Submission.Status.APPROVED
    ).submission
    pending = submission_create(submitter=alice, document=small_document()).submission

    page = client.get("/").content.decode()

    assert f"/api/v1/submissions/{approved.uuid}/" in page
    assert str(pending.uuid) not in page


def test_htmx_refresh_gets_only_the_rows(client, bob, django_assert_max_num_queries):
    for _ in range(5):
        submission_create(
            submitter=bob, document=small_document(), status=Submission.Status.APPROVED
        )

    # The session lookup, the submissions, and one prefetch per relation.
    with django_assert_max_num_queries(4):
        response = client.get("/", headers={"HX-Request": "true"})

    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<div class="table-scroll" tabindex="0">\n<table')
    assert "<html" not in fragment
    assert fragment.count("<tr>") == 6  # header + 5 rows


def test_the_home_page_installs_the_agent_with_extras_it_has(client, db):
    page = client.get("/").content.decode()

    install = re.search(r"pip install '\./agents\[([a-z,]+)\]'", page)
    assert install, "the install command names the driver extra"
    pyproject = tomllib.loads((settings.BASE_DIR / "agents" / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert set(install.group(1).split(",")) <= set(extras)
    # a PostgreSQL run needs psycopg: the extra the command installs has it
    assert any(dep.startswith("psycopg") for dep in extras["postgresql"])
    assert "--dsn postgresql://" in page


@override_settings(DEBUG=True)  # load_demo_data is for development servers only
def test_the_home_page_example_query_returns_public_data(client, db):
    call_command("load_demo_data", stdout=io.StringIO())

    page = html.unescape(client.get("/").content.decode())

    url = re.search(r"curl '([^']+)'", page).group(1)
    response = client.get(url.removeprefix("http://testserver"))
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) > 1, "the example answers more than its header to the public"
    assert all("postgresql" in line and "ext4" in line for line in lines[1:])


def test_the_api_documentation_loads_nothing_from_outside(client, db):
    page = client.get("/api/docs/").content.decode()

    assert "fonts.googleapis" not in page and "fonts.gstatic" not in page
    assert not re.search(r"(src|href)=\"https?://", page)
    assert "/static/drf_spectacular_sidecar/redoc/" in page
    assert '"fontFamily": "system-ui, sans-serif"' in page
    # the site's icon, not the /favicon.ico a browser otherwise asks for (a 404)
    assert re.search(r'<link rel="icon" href="/static/results/favicon[.0-9a-f]*svg"', page)
