from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.models import User

from benchhub.accounts.auth import client_address
from benchhub.accounts.services import auth_failure_record, auth_failures_exceeded


class SignUpForm(UserCreationForm):
    email = forms.EmailField(
        required=True, help_text="Only used to reset your password; never shown."
    )

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class SignInForm(AuthenticationForm):
    """Django's sign-in, refused for a while after too many failures from one
    address or for one username (see accounts.services)."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "too_many": "Too many failed sign-ins; wait a few minutes before trying again.",
    }

    def clean(self):
        address = client_address(self.request)
        username = self.cleaned_data.get("username") or ""
        if auth_failures_exceeded(address=address, username=username):
            raise forms.ValidationError(self.error_messages["too_many"], code="too_many")
        try:
            return super().clean()
        except forms.ValidationError:
            auth_failure_record(address=address, username=username)
            raise


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="To tell your tokens apart, e.g. the machine the agent runs on.",
    )
