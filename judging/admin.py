from django.contrib import admin

from .models import Annotation


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["patch", "annotator", "label", "origin", "updated_at"]
    list_filter = ["label", "origin", "patch__dataset"]
    search_fields = ["patch__key", "annotator__username", "note"]
    raw_id_fields = ["patch", "annotator"]
