from typing import Any

from django import forms
from django.conf import settings

from sejury_web.forms import split_keys

from .bundle import FILE_TOO_LARGE
from .models import Dataset, Rubric
from .selectors import dataset_bugs_named
from .services import NO_BUGS


class BundleUploadForm(forms.Form):
    dataset = forms.CharField(
        max_length=200,
        help_text="An existing dataset's name (or slug) adds to it; a new name creates a dataset.",
    )
    file = forms.FileField(help_text="A JSONL bundle: bug, patch and label records.")

    def clean_file(self) -> object:
        upload = self.cleaned_data["file"]
        limit = settings.SEJURY_BUNDLE_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(FILE_TOO_LARGE.format(limit=limit))
        return upload


UNKNOWN_BUGS = "no bug {keys} in this dataset"


class DraftRequestForm(forms.Form):
    """Which bugs to draft: every bug of the dataset, or those named (comma or space separated)."""

    variant = forms.ChoiceField(choices=Rubric.Variant.choices, initial=Rubric.Variant.TEMPLATED)
    bug_keys = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Leave empty for every bug of the dataset.",
    )

    def __init__(self, *args: Any, dataset: Dataset, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dataset = dataset

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        keys = split_keys(cleaned.get("bug_keys", ""))
        cleaned["bugs"], missing = dataset_bugs_named(self.dataset, keys)
        if missing:
            raise forms.ValidationError(UNKNOWN_BUGS.format(keys=", ".join(missing)))
        if not cleaned["bugs"]:
            raise forms.ValidationError(NO_BUGS)
        return cleaned
