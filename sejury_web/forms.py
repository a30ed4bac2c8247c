import re
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User

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


class ModelTargetForm(forms.Form):
    """The model a form's work goes to (a new run, rubric drafts, the evaluator tester): a
    provider (blank: the configured default, named) and a model (blank: its default)."""

    provider = forms.ChoiceField(required=False)
    model = forms.CharField(
        required=False, max_length=128, help_text="Blank: the provider's default model."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = provider_choices()  # type: ignore[attr-defined]


class ReasoningTargetForm(ModelTargetForm):
    """A model, and how hard it reasons (checked against the model by the service)."""

    reasoning = forms.CharField(
        label="Reasoning",
        required=False,
        max_length=16,
        widget=forms.TextInput(attrs={"placeholder": "the model's default"}),
        help_text="How hard a reasoning model thinks: an effort (minimal, low, medium, high) "
        "or, for Gemini, a thinking budget in tokens. It is billed as output.",
    )


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


class BulkRolesForm(forms.Form):
    """A lead's role change for many users at once (the Users page): give or remove one role,
    for the users ticked or for every user the page's search finds (``found``: how many it
    found when the page was shown, so a search that now finds others is not changed blind)."""

    GIVE, REMOVE = "give", "remove"
    TICKED, FOUND = "ticked", "found"

    change = forms.ChoiceField(choices=[(GIVE, "Give"), (REMOVE, "Remove")], initial=GIVE)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    scope = forms.ChoiceField(
        choices=[(TICKED, "the users ticked"), (FOUND, "every user found")],
        initial=TICKED,
        widget=forms.RadioSelect,
    )
    users = ModelIdsField(queryset=User.objects.all(), required=False)
    found = forms.IntegerField(min_value=0, required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("scope") == self.TICKED and not cleaned.get("users"):
            self.add_error("users", "Tick at least one user, or choose every user found.")
        return cleaned


class UserCreateForm(UserCreationForm):
    roles = forms.MultipleChoiceField(
        choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
