"""The evaluator tester's forms: which levels to build, which configurations to test."""

from django import forms

from judging.runs.services import RunError
from rubrics.ladders.operators import LEVELS
from sejury_web.forms import ModelTargetForm

from .services import Configuration, configurations_parse

DEFAULT_CONFIGS = "s1b; s3; rubric@golden; s1b,s2,s3"
LEVEL_CHOICES = [(str(level), f"L{level} {name}") for level, name in LEVELS.items()]


class LevelsForm(forms.Form):
    levels = forms.MultipleChoiceField(
        choices=LEVEL_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        initial=[str(level) for level in LEVELS],
        error_messages={"required": "choose at least one level"},
    )

    def chosen(self) -> list[int]:
        return sorted(int(level) for level in self.cleaned_data["levels"])


class RefineForm(ModelTargetForm):
    configs = forms.CharField(
        label="Configurations",
        initial=DEFAULT_CONFIGS,
        max_length=1000,
        help_text="Separated by “;”: a strategy or a team (s1b,s2,s3), optionally @context "
        "(rubric@golden). Without one, the rubric judge reads the golden rubric, the others "
        "the reference fix.",
    )
    # provider, model: ModelTargetForm's

    def clean_configs(self) -> list[Configuration]:
        try:
            return configurations_parse(self.cleaned_data["configs"])
        except RunError as error:
            raise forms.ValidationError(str(error)) from None
