from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from benchhub.accounts import views
from benchhub.accounts.forms import SignInForm
from benchhub.lib.methods import page_methods
from benchhub.moderation import views as moderation_views

app_name = "accounts"


def _page(view, template: str, **kwargs):
    """Django's view with BenchHub's template; a form page takes POST too."""
    methods = ("GET", "POST") if hasattr(view, "post") else ("GET",)
    return page_methods(*methods)(view.as_view(template_name=f"accounts/{template}.html", **kwargs))


urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", _page(views.SignInView, "login", form_class=SignInForm), name="login"),
    path("logout/", page_methods("POST")(views.SignOutView.as_view()), name="logout"),
    path(
        "password/change/",
        _page(
            auth_views.PasswordChangeView,
            "password_change",
            success_url=reverse_lazy("accounts:password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "password/change/done/",
        _page(auth_views.PasswordChangeDoneView, "password_change_done"),
        name="password_change_done",
    ),
    path(
        "password/reset/",
        _page(
            auth_views.PasswordResetView,
            "password_reset",
            email_template_name="accounts/password_reset_email.txt",
            subject_template_name="accounts/password_reset_subject.txt",
            success_url=reverse_lazy("accounts:password_reset_done"),
        ),
        name="password_reset",
    ),
    path(
        "password/reset/sent/",
        _page(auth_views.PasswordResetDoneView, "password_reset_done"),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        _page(
            auth_views.PasswordResetConfirmView,
            "password_reset_confirm",
            success_url=reverse_lazy("accounts:password_reset_complete"),
        ),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        _page(auth_views.PasswordResetCompleteView, "password_reset_complete"),
        name="password_reset_complete",
    ),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("submissions/", moderation_views.my_submissions, name="submissions"),
    path(
        "submissions/<uuid:uuid>/",
        moderation_views.my_submission_act,
        name="submission-act",
    ),
]
