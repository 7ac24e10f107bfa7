"""Every answer under /api/ is JSON in the one error shape: unknown paths,
wrong methods, Django's own refusals and unexpected errors alike."""

from __future__ import annotations

import json
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client, override_settings

from benchhub.results import selectors


def assert_error_shape(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    return error


@pytest.mark.parametrize(
    "path", ["/api/", "/api/v1/", "/api/v1/nope/", "/api/v2/submissions/", "/api/v1/runs/x/"]
)
@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_path_is_a_json_404(db, path, debug):
    with override_settings(DEBUG=debug):
        response = Client().get(path)

    assert_error_shape(response, 404, "not_found")


def test_a_missing_final_slash_is_named(db):
    error = assert_error_shape(Client().get("/api/v1/runs"), 404, "not_found")

    assert "did you mean /api/v1/runs/ ?" in error["message"]


@pytest.mark.parametrize("path", ["/api/v1/comparisons/export.csv", "/api/v1/nonsense"])
def test_no_slash_is_suggested_where_there_is_nothing_either(db, path):
    """The catch-all 404 route is not an endpoint: "did you mean …/ ?" sent a
    user to a second 404."""
    error = assert_error_shape(Client().get(path), 404, "not_found")

    assert error["message"] == f"No API endpoint at {path}"


def test_a_page_outside_the_api_is_still_the_html_404(db):
    response = Client().get("/no-such-page/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_page_not_found_is_a_benchhub_page_that_says_why(db):
    """Django's bare "Not Found" had no header, no way back and none of the
    404's own reason: a dead end for whoever followed an old link."""
    client = Client()

    run = client.get("/runs/99999/").content.decode()
    nowhere = client.get("/no-such-page/").content.decode()

    assert "No run 99999 that you may see" in run
    for page in (run, nowhere):
        assert 'class="site-header"' in page
        assert 'href="/results/"' in page
    assert "Resolver404" not in nowhere
    assert "Nothing at <code>/no-such-page/</code>" in nowhere


def test_only_a_result_not_found_speaks_of_moderators(db):
    """Every 404, /accounts/password/reset/x/ too, said that a result waits for
    a moderator and offered to sign in 'if it is yours'."""
    client = Client()

    run = client.get("/runs/99999/").content.decode()
    nowhere = client.get("/accounts/nothing-here/").content.decode()

    assert "waits for a moderator" in run
    assert "waits for a moderator" not in nowhere
    assert "Nothing at <code>/accounts/nothing-here/</code>" in nowhere


def test_a_page_for_moderators_only_says_so_on_a_benchhub_page(db):
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_user(username="reader"))

    response = client.get("/moderation/")

    assert response.status_code == 403
    page = response.content.decode()
    assert 'class="site-header"' in page and "Moderators only" in page


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("delete", "/api/v1/runs/"),
        ("put", "/api/v1/submissions/"),
        ("patch", "/api/v1/measurements/"),
        ("post", "/api/v1/measurements/export.csv"),
    ],
)
def test_a_wrong_method_is_a_json_405(db, method, path):
    response = getattr(Client(), method)(path)

    assert_error_shape(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/?format=csv",
        "/api/v1/measurements/?format=xml",
        "/api/v1/measurements/export.csv?format=csv",
        "/api/v1/benchmarks/?format=yaml",
        "/api/v1/baselines/?format=xml&fingerprint=" + "0" * 64,
    ],
)
def test_a_format_the_endpoint_lacks_is_a_400_naming_it(db, path):
    # DRF answered 404 "Not found." as if there were no such list.
    answer = Client().get(path)

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"].startswith("format: ")
    assert error["details"][0]["path"] == "$.format"


def test_a_request_for_an_unknown_host_is_a_json_400(db):
    response = Client().get("/api/v1/runs/", HTTP_HOST="evil.invalid")

    error = assert_error_shape(response, 400, "bad_request")
    assert "does not answer to the host name" in error["message"]
    assert "ALLOWED_HOSTS" not in response.content.decode()  # the operator's, in the log


def test_the_page_for_an_unknown_host_names_it_but_not_the_servers_settings(db, caplog):
    with caplog.at_level(logging.ERROR, logger="django.security"):
        response = Client().get("/compare/", HTTP_HOST="elsewhere.example")

    assert response.status_code == 400
    page = response.content.decode()
    assert "This site does not answer to the host name the request was sent to" in page
    assert "ALLOWED_HOSTS" not in page
    assert any("ALLOWED_HOSTS" in record.getMessage() for record in caplog.records)


def test_an_unexpected_error_in_a_view_is_a_500_with_a_logged_id(db, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("the selector broke")

    monkeypatch.setattr(selectors, "run_list", broken)
    with caplog.at_level(logging.ERROR, logger="benchhub.api"):
        response = Client().get("/api/v1/runs/")

    error = assert_error_shape(response, 500, "server_error")
    error_id = error["details"][0]["message"].removeprefix("error id ")
    assert error_id in error["message"]
    (record,) = [r for r in caplog.records if r.name == "benchhub.api"]
    assert error_id in record.getMessage()
    assert record.exc_info[1].args == ("the selector broke",)
    assert "the selector broke" not in response.content.decode()  # no internals leak


def test_an_unexpected_error_outside_a_view_is_a_json_500_too(db, monkeypatch, caplog):
    """A failure in middleware never reaches DRF: handler500 answers."""
    from benchhub.lib import jsonbody

    def broken(stream, size):
        # Not an OSError: a body whose read fails so is the client's (a 400).
        raise RuntimeError("the middleware broke")

    monkeypatch.setattr(jsonbody, "_read_at_most", broken)
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR, logger="benchhub.api"):
        response = client.post(
            "/api/v1/submissions/",
            data=b"{}",
            content_type="application/json",
            CONTENT_LENGTH="",
            HTTP_TRANSFER_ENCODING="chunked",
        )

    error = assert_error_shape(response, 500, "server_error")
    assert any(error["details"][0]["message"][9:] in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("path", "host", "reason"),
    [
        (
            "/results/?" + "&".join(["a"] * 1100),
            "127.0.0.1",
            "The number of GET/POST parameters exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS.",
        ),
        ("/compare/", "elsewhere.example", "does not answer to the host name"),
    ],
)
def test_a_page_refused_as_a_bad_request_says_why_on_a_page_of_the_site(db, path, host, reason):
    """Django's own 400 page said "Bad Request (400)" and nothing else."""
    response = Client().get(path, HTTP_HOST=host)

    assert response.status_code == 400
    page = response.content.decode()
    assert "<h1>Bad request</h1>" in page
    assert reason in page
    assert 'href="/results/"' in page  # the site's header: a way on


def test_an_unexpected_error_on_a_page_is_still_the_html_500(db, monkeypatch):
    from benchhub.results import views

    def broken(**kwargs):
        raise RuntimeError("the page broke")

    monkeypatch.setattr(views.selectors, "latest_submissions", broken)
    response = Client(raise_request_exception=False).get("/")

    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")


SCHEMA_ERRORS = {
    "format=xml": ("get", "?format=xml", {}, 400, "invalid", "$.format"),
    "lang=xx": ("get", "?lang=xx", {}, 400, "invalid", "$.lang"),
    "lang=NUL": ("get", "?lang=%00", {}, 400, "invalid", "$.lang"),
    # went into the document's version and the file name's header: a 500
    "version=a\\nb": ("get", "?version=a%0Ab", {}, 400, "invalid", "$.version"),
    "version=9": ("get", "?format=json&version=9", {}, 400, "invalid", "$.version"),
    "a typo": ("get", "?fromat=json", {}, 400, "invalid", "$.fromat"),
    "Accept: text/html": ("get", "", {"HTTP_ACCEPT": "text/html"}, 406, "not_acceptable", None),
    "POST": ("post", "", {}, 405, "method_not_allowed", None),
    "a wrong token": (
        "get", "", {"HTTP_AUTHORIZATION": "Token bh_wrong"}, 401, "authentication_failed", None
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", SCHEMA_ERRORS)
def test_the_openapi_documents_errors_are_json_in_the_error_shape(db, case):
    """drf-spectacular answered them in the YAML it serves the document in."""
    method, query, headers, status, code, path = SCHEMA_ERRORS[case]
    response = getattr(Client(raise_request_exception=False), method)(
        f"/api/schema/{query}", **headers
    )

    error = assert_error_shape(response, status, code)
    if path is not None:
        assert error["details"][0]["path"] == path
        assert error["message"].startswith(f"{path[2:]}: ")


@pytest.mark.parametrize(
    ("query", "headers", "content_type"),
    [
        ("", {}, "application/vnd.oai.openapi; charset=utf-8"),
        ("?format=yaml", {}, "application/vnd.oai.openapi; charset=utf-8"),
        ("?format=json", {}, "application/vnd.oai.openapi+json"),
        ("?format=", {}, "application/vnd.oai.openapi; charset=utf-8"),
        ("?lang=en&format=json", {}, "application/vnd.oai.openapi+json"),
        ("?lang=de", {}, "application/vnd.oai.openapi; charset=utf-8"),
        ("", {"HTTP_ACCEPT": "application/json"}, "application/json"),
    ],
)
def test_the_openapi_document_is_still_served_as_asked(db, query, headers, content_type):
    response = Client().get(f"/api/schema/{query}", **headers)

    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert b"openapi" in response.content[:40]


@pytest.mark.parametrize(
    ("accept", "authorization", "status", "code"),
    [
        ("application/json", "Token a b", 406, "not_acceptable"),
        ("image/png", "Token bh_not_a_token", 406, "not_acceptable"),
        ("application/json", "", 406, "not_acceptable"),
        ("text/html", "Token a b", 401, "authentication_failed"),
        ("text/html", "Token bh_not_a_token", 401, "authentication_failed"),
    ],
)
def test_the_docs_page_answers_errors_in_the_apis_shape(db, accept, authorization, status, code):
    """Its errors were rendered with its HTML template, whose context reads
    the user: with a bad token and an Accept it cannot serve (406), the
    token was checked during rendering and its 401 became a 500."""
    headers = {"HTTP_ACCEPT": accept}
    if authorization:
        headers["HTTP_AUTHORIZATION"] = authorization
    response = Client().get("/api/docs/", **headers)

    assert_error_shape(response, status, code)


LISTS = [
    "/api/v1/submissions/",
    "/api/v1/runs/",
    "/api/v1/measurements/",
    "/api/v1/hardware/",
    "/api/v1/storage/",
    "/api/v1/os/",
    "/api/v1/servers/",
    "/api/v1/clients/",
]
MADE_UP_CURSORS = {
    "p=abc": "cD1hYmM%3D",
    "not base64": "zzz",
    "not ASCII": "%C3%A9",
    "p=NUL": "cD0lMDA%3D",
    "p=2026-99-01": "cD0yMDI2LTk5LTAx",
    "o=-1": "bz0tMQ%3D%3D",
    "NUL alone": "%00",
    "spaces alone": "%20%20",
}


@pytest.mark.parametrize("cursor", MADE_UP_CURSORS)
@pytest.mark.parametrize("path", LISTS)
def test_a_made_up_cursor_is_a_400_naming_it(db, path, cursor):
    response = Client().get(f"{path}?cursor={MADE_UP_CURSORS[cursor]}")

    error = assert_error_shape(response, 400, "invalid")
    assert error["details"][0]["path"] == "$.cursor"


def test_the_cursors_the_api_writes_still_page_through_submissions(alice_api, alice):
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    stored = {
        str(submission_create(submitter=alice, document=small_document()).submission.uuid)
        for _ in range(5)
    }
    seen, url = [], "/api/v1/submissions/?page_size=2"
    while url:
        page = alice_api.get(url).json()
        seen += [submission["uuid"] for submission in page["results"]]
        url = page["next"]

    assert sorted(seen) == sorted(stored)


@pytest.mark.parametrize("junk", ["%00", "%0A", "%20", "%21", "%3D", "%C3%A9"])
def test_a_written_cursor_with_junk_appended_is_a_400_naming_it(alice_api, alice, junk):
    """Base64 decoding skips what is not base64: the cursor with a NUL or a
    space after it was answered as the page it led to, as if it were intact."""
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    for _ in range(3):
        submission_create(submitter=alice, document=small_document())
    next_url = alice_api.get("/api/v1/submissions/?page_size=1").json()["next"]
    cursor = parse_qs(urlsplit(next_url).query)["cursor"][0]
    assert alice_api.get(f"/api/v1/submissions/?cursor={cursor}").status_code == 200

    response = alice_api.get(f"/api/v1/submissions/?cursor={cursor}{junk}")

    error = assert_error_shape(response, 400, "invalid")
    assert error["details"] == [{"path": "$.cursor", "message": "not a cursor this API wrote"}]


@pytest.mark.parametrize(
    ("path", "query", "name"),
    [
        ("/api/v1/submissions/", "cursor=", "cursor"),
        ("/api/v1/submissions/", "status=waiting&page_size=", "page_size"),
        ("/api/v1/submissions/", "status=%20", "status"),
        ("/api/v1/measurements/", "submission=", "submission"),
        ("/api/v1/measurements/", "engine=postgresql&cores=", "cores"),
        ("/api/v1/measurements/", "metric=throughput&approximate=", "approximate"),
        ("/api/v1/measurements/export.csv", "param.clients=&engine=mariadb", "param.clients"),
        ("/api/v1/runs/", "ordering=", "ordering"),
        ("/api/v1/runs/", "run_param.locking=%09", "run_param.locking"),
        ("/api/v1/hardware/", "cpu_vendor=", "cpu_vendor"),
        ("/api/v1/benchmarks/", "ordering=", "ordering"),
    ],
)
def test_a_parameter_given_empty_is_a_400_naming_it(alice_api, path, query, name):
    """Read as absent, ?submission= with an unset variable answered every row."""
    response = alice_api.get(f"{path}?{query}")

    error = assert_error_shape(response, 400, "invalid")
    assert [detail["path"] for detail in error["details"]] == [f"$.{name}"]
    assert error["details"][0]["message"].startswith("given empty; leave it out, or give a value")


@pytest.mark.parametrize(
    ("name", "hint"),
    [("filesystem", True), ("param.clients", True), ("cores", False), ("submission", False)],
)
def test_an_empty_filter_says_how_to_ask_for_the_empty_value_where_there_is_one(
    anonymous_api, db, name, hint
):
    response = anonymous_api.get("/api/v1/measurements/", {name: ""})

    message = assert_error_shape(response, 400, "invalid")["details"][0]["message"]
    assert ("(none) selects the empty value" in message) is hint
    if hint:
        assert anonymous_api.get("/api/v1/measurements/", {name: "(none)"}).status_code == 200


@pytest.mark.parametrize("page_size", ["1e9", "0", "-5", "abc", "1001", "1.5", "\u0661"])
@pytest.mark.parametrize("path", ["/api/v1/submissions/", "/api/v1/measurements/", "/api/v1/runs/"])
def test_a_page_size_out_of_its_range_is_a_400_naming_the_range(anonymous_api, path, page_size):
    """DRF took any page_size it could not read for the default, silently:
    page_size=1e9 answered 100 rows, and a next URL carrying 1e9 again."""
    response = anonymous_api.get(path, {"page_size": page_size})

    error = assert_error_shape(response, 400, "invalid")
    expected = f"page_size: expected a whole number from 1 to 1000, not {page_size!r}"
    assert error["message"] == expected
    assert error["details"] == [
        {"path": "$.page_size", "message": "expected a whole number from 1 to 1000"}
    ]


def test_a_page_size_in_its_range_is_taken(alice_api, alice):
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    for _ in range(3):
        submission_create(submitter=alice, document=small_document())

    assert len(alice_api.get("/api/v1/submissions/", {"page_size": "2"}).json()["results"]) == 2
    assert len(alice_api.get("/api/v1/submissions/", {"page_size": "1000"}).json()["results"]) == 3


ORDERED_LISTS = [
    ("/api/v1/submissions/", "-created_at,-id"),
    ("/api/v1/runs/", "-id"),
    ("/api/v1/measurements/", "-id"),
    ("/api/v1/measurements/export.csv", "-id"),
    ("/api/v1/hardware/", "-id"),
    ("/api/v1/storage/", "-id"),
    ("/api/v1/benchmarks/", "name"),
]


@pytest.mark.parametrize("ordering", ["value", "-value", "id", "name,-id", "\x00"])
@pytest.mark.parametrize(("path", "accepted"), ORDERED_LISTS)
def test_an_ordering_a_list_does_not_have_is_a_400_naming_the_one_it_has(
    anonymous_api, path, accepted, ordering
):
    """A list has one order: another one was answered in that order without
    a word (submissions, dimensions, benchmarks) or as an "unknown filter"."""
    response = anonymous_api.get(path, {"ordering": ordering})

    error = assert_error_shape(response, 400, "invalid")
    assert error["message"] == (
        f"ordering: {ordering!r} is not an order of this list;"
        f" accepted: {accepted} (its only order)"
    )
    assert error["details"] == [{"path": "$.ordering", "message": f"accepted: {accepted}"}]


@pytest.mark.parametrize(("path", "accepted"), ORDERED_LISTS)
def test_a_lists_own_ordering_is_taken(anonymous_api, db, path, accepted):
    response = anonymous_api.get(path, {"ordering": accepted})
    assert response.status_code == 200
    if response.streaming:  # read to its end, as a server does: its cursor closes with it
        assert b"".join(response.streaming_content).startswith(b"measurement_id,")


def test_the_own_ordering_still_filters_and_pages(alice_api, alice):
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    for _ in range(3):
        submission_create(submitter=alice, document=small_document())

    page = alice_api.get("/api/v1/runs/", {"ordering": "-id", "page_size": 2, "noise": "quiet"})
    assert page.status_code == 200 and len(page.json()["results"]) == 2
    assert "ordering=-id" in page.json()["next"]
    typo = alice_api.get("/api/v1/runs/", {"ordering": "-id", "noize": "quiet"})
    assert typo.json()["error"]["message"].startswith("noize: unknown filter")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/submissions/",
        "/api/v1/hardware/",
        "/api/v1/storage/",
        "/api/v1/os/",
        "/api/v1/servers/",
        "/api/v1/clients/",
        "/api/v1/benchmarks/",
        "/api/v1/runs/",
        "/api/v1/measurements/",
    ],
)
def test_a_parameter_a_list_does_not_know_is_a_400_naming_it(anonymous_api, db, path):
    """A typo of a filter answered the whole list on all but runs and measurements."""
    response = anonymous_api.get(path, {"cpu_modle": "Xeon"})

    error = assert_error_shape(response, 400, "invalid")
    assert error["message"] == "cpu_modle: unknown filter; see /api/docs/ for the list"


def test_a_dimension_list_still_takes_its_filters_cursor_and_format(alice_api, alice):
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    for _ in range(2):
        submission_create(submitter=alice, document=small_document())
    known = {"cpu_model": "no such CPU", "page_size": "1", "ordering": "-id", "format": "json"}
    page = alice_api.get("/api/v1/hardware/", known)
    assert page.status_code == 200 and page.json()["results"] == []
    first = alice_api.get("/api/v1/storage/", {"page_size": "1"}).json()
    if first["next"]:
        assert alice_api.get(first["next"]).status_code == 200


def test_a_post_to_an_unknown_api_path_is_a_json_404_not_a_csrf_page(db):
    client = Client(enforce_csrf_checks=True)

    response = client.post(
        "/api/v1/submissions/0/reports/", data={}, content_type="application/json"
    )

    assert_error_shape(response, 404, "not_found")


def test_a_failed_csrf_check_under_the_api_is_json(db):
    from django.test import RequestFactory

    from benchhub.lib.api import csrf_failure

    response = csrf_failure(RequestFactory().post("/api/v1/anything/"), reason="no cookie")

    assert response.status_code == 403
    assert json.loads(response.content)["error"]["code"] == "permission_denied"


def test_a_multipart_body_drf_cannot_parse_is_a_malformed_request(alice_api):
    """DRF calls it a parse_error; the site's code for an unreadable body
    is malformed_request, as for a broken chunked body."""
    response = alice_api.generic(
        "POST", "/api/v1/imports/", b"--x\r\nnot a part", content_type="multipart/form-data"
    )

    error = assert_error_shape(response, 400, "malformed_request")
    assert "Multipart form parse error" in error["message"]
