from django.contrib import admin
from django.http import HttpRequest

from .models import LLMCall
from .types import OFFLINE_MARKER, Provider


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    """The log is evidence of what a model said: readable, never editable."""

    list_display = [
        "created_at",
        "purpose",
        "provider",
        "model",
        "status",
        "attempts",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_s",
        "origin",
    ]
    list_filter = ["status", "provider", "purpose", "model"]
    search_fields = ["request_hash", "purpose", "error"]
    date_hierarchy = "created_at"

    @admin.display(description="origin")
    def origin(self, call: LLMCall) -> str:
        return OFFLINE_MARKER if call.provider == Provider.OFFLINE else "LLM"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: LLMCall | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: LLMCall | None = None) -> bool:
        return False
