"""The Import page's SWE-bench form: instances, predictions (several), results (several)."""

from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from rubrics.bundle.base import FILE_TOO_LARGE


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one name; the cleaned value is a list (maybe empty)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            files = [single(item, initial) for item in data if item]
            if not files and self.required:
                raise forms.ValidationError(self.error_messages["required"], code="required")
            return files
        return [single(data, initial)] if data or self.required else []


def _within_limit(files: list[UploadedFile]) -> list[UploadedFile]:
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    for upload in files:
        if upload.size is not None and upload.size > limit:
            raise forms.ValidationError(f"{upload.name}: {FILE_TOO_LARGE.format(limit=limit)}")
    return files


class SwebenchUploadForm(forms.Form):
    dataset = forms.CharField(
        max_length=200,
        help_text="An existing dataset's name (or slug) adds to it; a new name creates a dataset.",
    )
    instances = forms.FileField(
        required=False,
        help_text="SWE-bench task instances (JSON Lines, a JSON array, or the hub's Parquet "
        "file): each becomes a bug. Leave it out if the dataset already holds the instances.",
    )
    predictions = MultipleFileField(
        help_text="One or more predictions files (JSON Lines, a JSON array, or an object keyed "
        "by instance id): each prediction becomes a patch of its model.",
    )
    results = MultipleFileField(
        required=False,
        help_text="The harness's report of each model run (results.json or "
        "<model>.<run_id>.json), and/or a zip of its logs folder (logs/run_evaluation/<run_id>, "
        "one report.json per instance: the tests each patch passed, the model read from the "
        "folder names): sets whether each patch's tests pass.",
    )

    def clean_instances(self) -> UploadedFile | None:
        upload = self.cleaned_data.get("instances")
        return _within_limit([upload])[0] if upload else None

    def clean_predictions(self) -> list[UploadedFile]:
        return _within_limit(self.cleaned_data["predictions"])

    def clean_results(self) -> list[UploadedFile]:
        return _within_limit(self.cleaned_data["results"])
