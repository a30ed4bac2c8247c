"""Forms of the dataset pages, and the dataset field that judging's forms share (a new run, a
new campaign): a field about datasets lives with them, below both its users."""

from typing import Any

from django import forms
from django.conf import settings

from rubrics.bundle.base import FILE_TOO_LARGE


class DatasetChoiceField(forms.ModelChoiceField):
    """A dataset picked by its slug, shown with its patch count (its queryset must annotate
    ``patch_count``, as ``rubrics.selectors.dataset_list`` does)."""

    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} ({obj.patch_count} patches)"


class BundleUploadForm(forms.Form):
    dataset = forms.CharField(
        max_length=200,
        help_text="An existing dataset's name (or slug) adds to it; a new name creates a dataset.",
    )
    file = forms.FileField(help_text="A JSONL bundle: bug, patch and label records.")
    grant_annotator_role = forms.BooleanField(
        required=False,
        label="Give the annotator role to the existing users this file names as annotators",
        help_text=(
            "Only to users without any role (made by an earlier import or a script); each"
            " change is recorded in the audit trail. A lead or a reviewer is never made an"
            " annotator by an import: annotators must stay blind to the judge's verdicts."
        ),
    )

    def clean_file(self) -> object:
        upload = self.cleaned_data["file"]
        limit = settings.SEJURY_BUNDLE_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(FILE_TOO_LARGE.format(limit=limit))
        return upload
