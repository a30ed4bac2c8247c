from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from sejury_web.diffs import DiffError, normalized_diff_hash, parse_diff

from .models import Bug, BundleImport, Dataset, Patch


def _clean_diff(text: str) -> str:
    try:
        parse_diff(text)
    except DiffError as exc:
        raise forms.ValidationError(str(exc)) from exc
    return text


class BugForm(forms.ModelForm):
    # Diffs are kept exactly as given: no stripping of their final newline.
    reference_patch = forms.CharField(widget=forms.Textarea, strip=False)

    def clean_reference_patch(self) -> str:
        return _clean_diff(self.cleaned_data["reference_patch"])


class PatchForm(forms.ModelForm):
    diff = forms.CharField(widget=forms.Textarea, strip=False)

    def clean_diff(self) -> str:
        return _clean_diff(self.cleaned_data["diff"])


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]


@admin.register(Bug)
class BugAdmin(admin.ModelAdmin):
    form = BugForm
    list_display = ["key", "dataset", "language", "bug_type", "title"]
    list_filter = ["dataset", "language", "bug_type"]
    search_fields = ["key", "title", "description"]
    list_select_related = ["dataset"]


@admin.register(Patch)
class PatchAdmin(admin.ModelAdmin):
    list_display = ["key", "bug", "dataset", "source", "tests_pass"]
    list_filter = ["dataset", "source", "tests_pass"]
    search_fields = ["key", "bug__key"]
    list_select_related = ["bug", "dataset"]
    raw_id_fields = ["bug"]
    readonly_fields = ["dataset", "diff_hash"]
    form = PatchForm

    def save_model(self, request: HttpRequest, obj: Patch, form: Any, change: bool) -> None:
        # The dataset follows the bug; the hash follows the diff.
        obj.dataset = obj.bug.dataset
        obj.diff_hash = normalized_diff_hash(parse_diff(obj.diff))
        super().save_model(request, obj, form, change)


@admin.register(BundleImport)
class BundleImportAdmin(admin.ModelAdmin):
    list_display = ["dataset", "filename", "imported_by", "size", "created_at"]
    list_filter = ["dataset"]
    readonly_fields = [f.name for f in BundleImport._meta.fields]
