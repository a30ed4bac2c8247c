from django.contrib import admin

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is written by services, never by hand."""

    list_display = ("created_at", "actor", "action", "target_repr")
    list_filter = ("action",)
    search_fields = ("target_repr", "actor__username", "action")
    date_hierarchy = "created_at"

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False
