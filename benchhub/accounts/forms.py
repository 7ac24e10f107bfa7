from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.models import User

from benchhub.accounts.auth import client_address
from benchhub.accounts.services import (
    signin_failure_record,
    signin_success_record,
    signin_wait,
)


class SignUpForm(UserCreationForm):
    email = forms.EmailField(
        required=True, help_text="Only used to reset your password; never shown."
    )

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class SignInForm(AuthenticationForm):
    """Django's sign-in, slowed after failures for one username from one address
    (see accounts.services): ``wait`` is then the seconds to wait, and the page
    answers 429 with Retry-After."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "too_many": "Too many failed sign-ins for this account from your address; "
        "try again in %(seconds)s seconds.",
    }
    wait = 0

    def clean(self):
        address = client_address(self.request)
        username = self.cleaned_data.get("username") or ""
        self.wait = signin_wait(username=username, address=address)
        if self.wait:
            raise forms.ValidationError(
                self.error_messages["too_many"], code="too_many", params={"seconds": self.wait}
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            signin_failure_record(username=username, address=address)
            raise
        signin_success_record(username=username, address=address)
        return cleaned


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="To tell your tokens apart, e.g. the machine the agent runs on.",
    )
