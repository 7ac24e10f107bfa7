"""/imports/new/: a signed-in person uploads a tool's output through a form,
previews what would be stored, and stores it; errors come back next to the
fields with what they typed kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from benchhub_contract.schema import submission_schema
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchhub.imports.forms import ToolUploadForm
from benchhub.results.models import Measurement, Metric, Run, Submission

URL = "/imports/new/"
FIXTURES = Path(__file__).resolve().parents[2] / "agents/tests/importers/fixtures"
PGBENCH = (FIXTURES / "pgbench15-tpcb.txt").read_text()
SYSBENCH = (FIXTURES / "sysbench10-postgresql-oltp_read_write.txt").read_text()
XSS = "<script>alert('owned')</script>"


@pytest.fixture
def alice_web(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def sysbench_form(**changes: Any) -> dict[str, Any]:
    fields = {
        "tool": "sysbench",
        "output": SYSBENCH,
        "test": "oltp_read_write",
        "database_engine": "postgresql",
        "database_version_string": "15.20",
        "hardware_cpu": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz",
        "hardware_cores": "4",
        "hardware_ram_gib": "16",
        "os_family": "linux",
        "storage_filesystem": "xfs",
        "storage_mount_options": "noatime",
        "client_protocol": "unix_socket",
        "action": "store",
    }
    return fields | changes


def pgbench_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("pgbench.txt", PGBENCH.encode(), content_type="text/plain")


def test_signed_out_visitor_is_sent_to_sign_in(client):
    response = client.get(URL)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={URL}"


def test_form_offers_every_tool_and_the_schemas_vocabularies(alice_web):
    response = alice_web.get(URL)

    assert response.status_code == 200
    page = response.content.decode()
    assert 'value="pgbench"' in page and 'value="sysbench"' in page
    assert ">Unix socket</option>" in page
    assert 'value="nvme"' in page


@pytest.mark.parametrize(
    ("field", "section", "key"),
    [
        ("database_engine", "database", "engine"),
        ("os_family", "os", "family"),
        ("storage_kind", "storage", "kind"),
        ("client_protocol", "client", "protocol"),
    ],
)
def test_selects_offer_exactly_the_schemas_enum(field, section, key):
    offered = [value for value, _ in ToolUploadForm.base_fields[field].choices if value]

    assert offered == submission_schema()["$defs"][section]["properties"][key]["enum"]


def test_pgbench_file_is_stored_and_its_page_shows_the_runs(alice_web, alice):
    response = alice_web.post(
        URL, {"tool": "pgbench", "file": pgbench_file(), "hardware_cores": "8", "action": "store"}
    )

    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/imports/{submission.uuid}/"
    assert (submission.submitter, submission.source, submission.status) == (
        alice,
        "import",
        "pending",
    )
    page = alice_web.get(response["Location"]).content.decode()
    # once: the page printed its messages as well as base.html's site-wide block
    assert page.count("Stored: pending until a moderator approves it.") == 1
    assert "status-pending" in page
    assert "PostgreSQL 15.20" in page
    assert "tps" in page and "2400.595767" in page and "tx/s" in page
    assert "clients=4" in page


def test_pasted_sysbench_output_is_stored_with_the_described_environment(alice_web):
    response = alice_web.post(URL, sysbench_form())

    assert response.status_code == 302
    run = Run.objects.select_related("hardware", "storage", "client", "server").get()
    assert (run.hardware.cores, run.hardware.ram_bytes) == (4, 16 * 1024**3)
    assert (run.storage.filesystem, run.storage.mount_options) == ("xfs", "noatime")
    assert (run.client.protocol, run.client.load_engine) == ("unix_socket", "sysbench")
    assert (run.server.engine, run.server.version) == ("postgresql", "15.20")
    assert Measurement.objects.get(run=run, metric__name="tps").value == 1559.84


def test_preview_with_htmx_answers_the_fragment_and_stores_nothing(alice_web):
    response = alice_web.post(URL, sysbench_form(action="preview"), HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<div id="tool-upload">')
    assert "Preview — nothing is stored yet" in page
    assert "ready to store" in page
    assert "latency_p95" in page and "4.03" in page and "threads=4" in page
    assert Submission.objects.count() == 0


def test_preview_without_javascript_answers_the_whole_page(alice_web):
    response = alice_web.post(URL, sysbench_form(action="preview"))

    page = response.content.decode()
    assert "<html" in page
    assert "Preview — nothing is stored yet" in page
    assert Submission.objects.count() == 0


def test_preview_shows_what_the_output_states_about_the_server(alice_web):
    response = alice_web.post(
        URL, {"tool": "pgbench", "file": pgbench_file(), "action": "preview"}, HTTP_HX_REQUEST="1"
    )

    page = response.content.decode()
    assert "version_string=PostgreSQL 15.20 (Debian 15.20-0+deb12u1)" in page
    assert "load_engine=pgbench" in page


def test_wrong_file_is_refused_next_to_the_file_with_everything_typed_kept(alice_web):
    response = alice_web.post(
        URL,
        {
            "tool": "sysbench",
            "file": pgbench_file(),
            "test": "oltp_read_write",
            "hardware_cpu": "AMD EPYC 7B13",
            "database_version_string": "PostgreSQL 16.2",
            "action": "store",
        },
    )

    assert response.status_code == 200
    form = response.context["form"]
    assert "expected a 'SQL statistics:' block" in form.errors["file"][0]
    page = response.content.decode()
    assert 'value="AMD EPYC 7B13"' in page
    assert 'value="PostgreSQL 16.2"' in page
    assert "number of transactions actually processed: 11998" in page  # the file's text
    assert "Your file&#x27;s text is kept in the box below" in page
    assert Submission.objects.count() == 0


def test_missing_database_is_an_error_on_the_version_field(alice_web):
    response = alice_web.post(URL, sysbench_form(database_engine="", database_version_string=""))

    form = response.context["form"]
    assert list(form.errors) == ["database_version_string"]
    assert "does not name the database server" in form.errors["database_version_string"][0]
    assert Submission.objects.count() == 0


def test_sysbench_without_its_test_is_an_error_on_the_test_field(alice_web):
    response = alice_web.post(URL, sysbench_form(test=""))

    assert "which test ran" in response.context["form"].errors["test"][0]
    assert Submission.objects.count() == 0


def test_neither_file_nor_text_is_an_error_on_the_file_field(alice_web):
    response = alice_web.post(URL, sysbench_form(output=""))

    assert "Upload the tool's output file" in response.context["form"].errors["file"][0]


def test_submitting_twice_stores_once(alice_web):
    alice_web.post(URL, sysbench_form())

    again = alice_web.post(URL, sysbench_form(), follow=True)

    assert Submission.objects.count() == 1
    assert "You uploaded this before; nothing new was stored." in again.content.decode()


def test_markup_typed_in_a_field_is_shown_as_text(alice_web):
    form = sysbench_form(hardware_cpu=XSS, command=XSS, database_config_profile=XSS)

    preview = alice_web.post(URL, form | {"action": "preview"}, HTTP_HX_REQUEST="1")
    stored = alice_web.post(URL, form, follow=True)

    escaped = "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;"
    for page in (preview.content.decode(), stored.content.decode()):
        assert XSS not in page
        assert escaped in page


def test_pending_upload_is_not_shown_to_someone_else(alice_web, bob):
    alice_web.post(URL, sysbench_form())
    submission = Submission.objects.get()
    other = Client()
    other.force_login(bob)

    assert other.get(f"/imports/{submission.uuid}/").status_code == 404
    assert Client().get(f"/imports/{submission.uuid}/").status_code == 404


def test_upload_page_queries_do_not_grow_with_its_measurements(
    alice_web, django_assert_max_num_queries
):
    alice_web.post(URL, {"tool": "pgbench", "file": pgbench_file(), "action": "store"})
    alice_web.post(URL, sysbench_form())
    uuids = list(Submission.objects.values_list("uuid", flat=True))

    for uuid in uuids:
        # session, user, the header's roles, submission, runs (with their
        # dimensions), measurements
        with django_assert_max_num_queries(6):
            assert alice_web.get(f"/imports/{uuid}/").status_code == 200


def test_a_metric_missing_from_the_database_is_named_with_the_form_kept(alice_web):
    """Deleted from a shell, or the web process started before migrate: the
    server's fault (503), told on the form, not on a bare error page."""
    Metric.objects.filter(benchmark__name="sysbench", name="latency_p95").delete()

    response = alice_web.post(URL, sysbench_form())

    assert response.status_code == 503
    assert response["Retry-After"] == "300"  # once an administrator has run migrate
    errors = response.context["form"].non_field_errors()
    assert "lacks metric latency_p95 of benchmark sysbench" in errors[0]
    assert "SQL statistics:" in response.content.decode()  # the pasted output, kept
    assert Submission.objects.count() == 0
