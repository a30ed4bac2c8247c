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

        # What the home page shows a reviewer and a lead of rubrics (sejury_web.home).
        from rubrics.home import home_sections_register

        home_sections_register()

        # What the offline model answers to the rubric prompts, registered at import.
        import rubrics.review.offline  # noqa: F401
        from rubrics.bundle.uploads import bundle_uploads_resume_unfinished
        from rubrics.review.services import rubric_drafts_resume_unfinished
        from sejury_web.durable import JobKind, job_kind_register

        # What a starting worker finishes of what a killed worker left (sejury_web.durable).
        job_kind_register(
            JobKind("rubric drafts", ("rubrics.draft_rubric",), rubric_drafts_resume_unfinished)
        )
        job_kind_register(
            JobKind(
                "bundle uploads",
                ("rubrics.import_bundle_upload",),
                bundle_uploads_resume_unfinished,
            )
        )
