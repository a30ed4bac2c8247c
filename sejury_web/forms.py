import re

from django import forms
from django.contrib.auth.forms import UserCreationForm

from .roles import Role


def split_keys(text: str) -> list[str]:
    """Keys one per line or separated by commas (or spaces), each once, in order."""
    return list(dict.fromkeys(key for key in re.split(r"[\s,]+", text) if key))


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
