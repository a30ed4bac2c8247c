from django import forms
from django.conf import settings

from rubrics.bundle.base import FILE_TOO_LARGE


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
