import re

from django import forms
from django.contrib.auth.forms import UserCreationForm

from .llm import Provider
from .llm.config import llm_settings
from .roles import Role


def split_keys(text: str) -> list[str]:
    """Keys one per line or separated by commas (or spaces), each once, in order."""
    return list(dict.fromkeys(key for key in re.split(r"[\s,]+", text) if key))


def provider_choices() -> list[tuple[str, str]]:
    """The choices of a form's model provider (a new run, the evaluator tester): the
    configured default (named), or any provider."""
    default = llm_settings().provider
    return [
        ("", f"Configured default ({default})"),
        *[(provider.value, provider.value) for provider in Provider],
    ]


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(
        choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=False
    )


class UserCreateForm(UserCreationForm):
    roles = forms.MultipleChoiceField(
        choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
