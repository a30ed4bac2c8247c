from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging, annotations and agreement"

    def ready(self) -> None:
        from rubrics.bundle import register_kind

        from .bundle_kinds import LabelKind

        register_kind(LabelKind())
