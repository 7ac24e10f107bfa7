"""Sign up, sign in and out, passwords and API tokens in BenchHub's pages."""

from __future__ import annotations

import html
import re
import types

from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from benchhub.accounts.models import ApiToken
from benchhub.accounts.services import api_token_create
from benchhub.results.services import submission_create
from tests.factories import small_document

PASSWORD = "correct horse battery 7"


def sign_up(client: Client, username: str = "Zoë") -> None:
    response = client.post(
        "/accounts/signup/",
        {
            "username": username,
            "email": "zoe@example.org",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 302, response.content.decode()
    assert response["Location"] == "/accounts/tokens/"


def test_a_stranger_signs_up_and_is_signed_in(client, db):
    sign_up(client)

    page = client.get("/").content.decode()
    assert "Zoë" in page
    assert "My submissions" in page and "Sign out" in page
    assert User.objects.get(username="Zoë").email == "zoe@example.org"


def assert_sign_up_refused_as_taken(client: Client, username: str) -> None:
    response = client.post(
        "/accounts/signup/",
        {
            "username": username,
            "email": "z@example.org",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )

    assert response.status_code == 200
    assert "A user with that username already exists." in response.content.decode()
    assert User.objects.count() == 1
    assert "_auth_user_id" not in client.session


def test_a_username_taken_in_other_letters_is_refused(client, db):
    User.objects.create_user(username="zoë")

    assert_sign_up_refused_as_taken(client, "ZOË")


def test_a_username_taken_between_the_forms_check_and_the_insert_is_refused(
    client, db, monkeypatch
):
    """Two sign-ups of one name at once (a double click on the button): the
    second passed the form's check, and its insert's IntegrityError was a 500."""
    from benchhub.accounts.forms import SignUpForm

    is_valid = SignUpForm.is_valid

    def valid_then_taken(form) -> bool:
        valid = is_valid(form)
        User.objects.create_user(username="Zoë")  # the first request, meanwhile
        return valid

    monkeypatch.setattr(SignUpForm, "is_valid", valid_then_taken)

    assert_sign_up_refused_as_taken(client, "Zoë")


def test_a_token_is_shown_once_and_uploads_work_with_it(client, db):
    sign_up(client)

    page = client.post("/accounts/tokens/", {"name": "laptop <b>"}).content.decode()
    secret = re.search(r'<code id="new-token">(bh_[^<]+)</code>', page).group(1)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")

    assert api.get("/api/v1/submissions/").status_code == 200
    listing = client.get("/accounts/tokens/").content.decode()
    assert secret not in listing
    assert "laptop &lt;b&gt;" in listing and secret[:10] in listing


def test_sending_the_token_form_again_creates_no_second_token(client, db):
    """Reloading the answer sends its POST again (the browser asks; people
    say yes): that made a second token of the same name and showed its
    secret, while the agent was already set up with the first one's."""
    sign_up(client)
    form = client.get("/accounts/tokens/").content.decode()
    once = re.search(r'name="once" value="([^"]+)"', form).group(1)

    first = client.post("/accounts/tokens/", {"name": "laptop", "once": once}).content.decode()
    again = client.post("/accounts/tokens/", {"name": "laptop", "once": once}, follow=True)

    assert 'id="new-token"' in first
    assert ApiToken.objects.count() == 1
    page = again.content.decode()
    assert again.redirect_chain == [("/accounts/tokens/", 302)]
    assert 'id="new-token"' not in page
    assert "already created" in page
    assert client.post("/accounts/tokens/", {"name": "desktop", "once": "x"}).status_code == 200
    assert ApiToken.objects.count() == 2


def test_a_revoked_token_is_refused_from_the_next_request(client, db):
    sign_up(client)
    page = client.post("/accounts/tokens/", {"name": "ci"}).content.decode()
    secret = re.search(r'<code id="new-token">(bh_[^<]+)</code>', page).group(1)
    token = ApiToken.objects.get(name="ci")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert api.get("/api/v1/submissions/").status_code == 200

    client.post(f"/accounts/tokens/{token.pk}/revoke/")

    assert api.get("/api/v1/submissions/").status_code == 401
    assert "ci" not in client.get("/accounts/tokens/").content.decode().split("Your tokens")[1]


def test_nobody_revokes_someone_elses_token(client, alice):
    token = ApiToken.objects.create(user=alice, name="a", prefix="bh_x", digest="d" * 64)
    sign_up(client)

    client.post(f"/accounts/tokens/{token.pk}/revoke/")

    token.refresh_from_db()
    assert token.revoked_at is None


def test_sign_in_and_sign_out_with_a_post(client, db):
    User.objects.create_user(username="ann", password=PASSWORD)

    response = client.post("/accounts/login/", {"username": "ann", "password": PASSWORD})
    assert response["Location"] == "/accounts/submissions/"
    assert client.get("/accounts/logout/").status_code == 405  # a link cannot sign you out
    client.post("/accounts/logout/")

    assert client.get("/accounts/tokens/")["Location"].startswith("/accounts/login/")


def test_signing_out_says_so_on_the_page_it_leads_to_once(client, alice):
    client.force_login(alice)

    response = client.post("/accounts/logout/", follow=True)

    assert response.redirect_chain == [("/", 302)]
    page = response.content.decode()
    assert page.count('<li class="message message-success">You are signed out.</li>') == 1
    assert 'href="/accounts/login/' in page  # and the header offers to sign in again
    assert "You are signed out." not in client.get("/").content.decode()  # said once


def sign_out_next(page: str) -> str | None:
    """The "next" the header's sign-out form sends, or None."""
    form = re.search(r'<form method="post" action="/accounts/logout/".*?</form>', page, re.S)
    assert form, "no sign-out form"
    given = re.search(r'name="next" value="([^"]*)"', form.group(0))
    return html.unescape(given.group(1)) if given else None


def test_signing_out_returns_to_the_public_page_it_was_clicked_on(client, alice):
    """It always led home: from a comparison, its query and all was lost."""
    client.force_login(alice)
    here = "/results/?engine=postgresql&sort=-created"

    back_to = sign_out_next(client.get(here).content.decode())
    response = client.post("/accounts/logout/", {"next": back_to}, follow=True)

    assert back_to == here
    assert response.redirect_chain == [(here, 302)]
    assert "You are signed out." in response.content.decode()


def test_signing_out_of_a_page_for_signed_in_users_or_of_a_pending_run_leads_home(client, alice):
    """The tokens page would send the visitor on to the sign-in form, and a
    pending run is a 404 once signed out: the form gives no "next" there,
    and the server does not follow one to a page behind a sign-in."""
    client.force_login(alice)
    document = small_document()
    pending = submission_create(submitter=alice, document=document).submission
    run = pending.runs.get()

    for path in ("/accounts/tokens/", f"/runs/{run.pk}/", f"/submissions/{pending.uuid}/"):
        assert sign_out_next(client.get(path).content.decode()) is None, path
    assert sign_out_next(client.get("/compare/").content.decode()) == "/compare/"
    for private in ("/accounts/tokens/", "/moderation/", "/accounts/logout/"):
        client.force_login(alice)
        response = client.post("/accounts/logout/", {"next": private})
        assert response["Location"] == "/", private


def test_signing_out_refuses_a_next_on_another_site(client, alice):
    for elsewhere in (
        "https://evil.example/",
        "//evil.example/compare/",
        "/\\evil.example/",
        "javascript:alert(1)",
    ):
        client.force_login(alice)

        response = client.post("/accounts/logout/", {"next": elsewhere})

        assert response.status_code == 302
        assert response["Location"] == "/", elsewhere
    assert "_auth_user_id" not in client.session  # signed out all the same


def test_a_page_that_places_its_messages_shows_them_once(client, alice):
    client.force_login(alice)
    token, _ = api_token_create(user=alice, name="laptop")

    page = client.post(f"/accounts/tokens/{token.pk}/revoke/", follow=True).content.decode()

    assert page.count("revoked.</li>") == 1


def test_failed_sign_ins_are_slowed_down_even_with_the_right_password(client, db, monkeypatch):
    # The clock held still: on a busy machine the second of delay ran out
    # between the last failure and the right password, and the test failed.
    monkeypatch.setattr(
        "benchhub.accounts.services.time", types.SimpleNamespace(time=lambda: 1_800_000_000.0)
    )
    User.objects.create_user(username="ann", password=PASSWORD)
    for attempt in range(3):  # the first few are free
        page = client.post("/accounts/login/", {"username": "ann", "password": f"guess{attempt}"})
        assert page.status_code == 200
        assert "Please enter a correct username" in page.content.decode()

    page = client.post("/accounts/login/", {"username": "ann", "password": PASSWORD})

    assert page.status_code == 429
    assert page["Retry-After"] == "1"
    assert "try again in 1 seconds" in html.unescape(page.content.decode())
    assert "_auth_user_id" not in client.session


def test_password_change(client, db):
    User.objects.create_user(username="ann", password=PASSWORD)
    client.login(username="ann", password=PASSWORD)

    response = client.post(
        "/accounts/password/change/",
        {
            "old_password": PASSWORD,
            "new_password1": "another 9 words",
            "new_password2": "another 9 words",
        },
    )

    assert response["Location"] == "/accounts/password/change/done/"
    assert User.objects.get(username="ann").check_password("another 9 words")


def test_password_reset_by_mail(client, db):
    User.objects.create_user(username="ann", email="ann@example.org", password=PASSWORD)

    client.post("/accounts/password/reset/", {"email": "ann@example.org"})
    (message,) = mail.outbox
    link = re.search(r"https?://[^/]+(/accounts/password/reset/\S+)", message.body).group(1)
    form_url = client.get(link)["Location"]  # Django swaps the token for a session
    client.post(form_url, {"new_password1": "brand new 12 x", "new_password2": "brand new 12 x"})

    assert User.objects.get(username="ann").check_password("brand new 12 x")


def test_wrong_tokens_are_slowed_down(anonymous_api, alice, settings):
    settings.BENCHHUB_AUTH_FAILURES_ALLOWED = 5
    anonymous_api.credentials(HTTP_AUTHORIZATION="Token bh_wrong")
    answers = [anonymous_api.get("/api/v1/submissions/").status_code for _ in range(7)]

    assert answers == [401] * 5 + [429] * 2
    throttled = anonymous_api.get("/api/v1/submissions/")
    assert throttled.json()["error"]["code"] == "throttled"
    assert int(throttled["Retry-After"]) > 0


def test_sign_ups_from_one_address_are_limited_and_failed_forms_do_not_count(db, settings):
    settings.BENCHHUB_SIGNUPS_ALLOWED = 2
    one, other = Client(REMOTE_ADDR="203.0.113.7"), Client(REMOTE_ADDR="198.51.100.9")
    # A form with an error creates no account and costs nothing.
    refused = one.post("/accounts/signup/", {"username": "x", "email": "not an address"})
    assert refused.status_code == 200
    sign_up(one, "first")
    sign_up(Client(REMOTE_ADDR="203.0.113.7"), "second")

    third = Client(REMOTE_ADDR="203.0.113.7").post(
        "/accounts/signup/",
        {"username": "third", "email": "t@example.org", "password1": PASSWORD,
         "password2": PASSWORD},
    )  # fmt: skip

    assert third.status_code == 429
    assert "Too many accounts were created from your address" in third.content.decode()
    assert not User.objects.filter(username="third").exists()
    sign_up(other, "elsewhere")
    assert set(User.objects.values_list("username", flat=True)) == {"first", "second", "elsewhere"}


def test_the_header_sign_in_comes_back_to_the_page_with_its_query(client, db):
    """A comparison and a filtered list are their query: signing in from one
    landed on the bare /compare/ form, the comparison gone."""
    User.objects.create_user(username="reader", password=PASSWORD)
    page = client.get("/results/?engine=postgresql&benchmark=select-update").content.decode()
    link = re.search(r'href="(/accounts/login/\?next=[^"]+)"', page).group(1)

    signed_in = client.post(link, {"username": "reader", "password": PASSWORD})

    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/results/?engine=postgresql&benchmark=select-update"


def test_the_header_sign_in_comes_back_to_the_page_but_never_to_an_account_form(client, db):
    """From the sign-in page itself (or the password reset) the header's link
    sent a user who signed in back to that form, signed in, wondering."""
    results = client.get("/results/").content.decode()
    assert 'href="/accounts/login/?next=/results/"' in results

    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        page = client.get(path).content.decode()
        header = page[page.index('class="site-header"') : page.index("</header>")]
        assert 'href="/accounts/login/"' in header, path
