import re
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm

from .ids import is_id
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


class ModelIdsField(forms.ModelMultipleChoiceField):
    """``ModelMultipleChoiceField`` whose values are checked to be ids before they reach the
    query (Django's own sends ``pk__in`` any integer, and a number past 64 bits fails
    there): one that is not is refused as Django refuses a value that is not a number."""

    def _check_values(self, value: Any) -> Any:
        key = self.to_field_name or "pk"
        if key == "pk" and not isinstance(value, str | bytes):
            for item in value:
                if not is_id(str(item)):
                    raise forms.ValidationError(
                        self.error_messages["invalid_pk_value"],
                        code="invalid_pk_value",
                        params={"pk": item},
                    )
        return super()._check_values(value)  # type: ignore[misc]


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
