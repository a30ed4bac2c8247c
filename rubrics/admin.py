from django.contrib import admin

from .models import Bug, BundleImport, Dataset, Patch


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]


@admin.register(Bug)
class BugAdmin(admin.ModelAdmin):
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
    readonly_fields = ["diff_hash"]


@admin.register(BundleImport)
class BundleImportAdmin(admin.ModelAdmin):
    list_display = ["dataset", "filename", "imported_by", "size", "created_at"]
    list_filter = ["dataset"]
    readonly_fields = [f.name for f in BundleImport._meta.fields]
