from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "rubrics"
    verbose_name = "Datasets, bugs, patches and rubrics"

    def ready(self) -> None:
        from rubrics.bundle.base import register_kind
        from rubrics.bundle.bugs import BugKind, PatchKind
        from rubrics.bundle.rubrics import RubricKind

        for kind in (BugKind(), PatchKind(), RubricKind()):
            register_kind(kind)

        # What the offline model answers to the rubric prompts, registered at import.
        import rubrics.review.offline  # noqa: F401
