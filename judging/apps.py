from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging, annotations and agreement"

    def ready(self) -> None:
        # Importing them registers what the offline model answers to each strategy's prompts
        # and to the rejection-theme prompt.
        import judging.judges.offline
        import judging.runs.rejections_offline
        import judging.strategies  # noqa: F401
        from judging.annotations.bundle import LabelKind
        from judging.annotations.selectors import LabelCounts
        from judging.consensus.rubric_feedback import ConsensusDisagreements
        from judging.consensus.verdicts import ConsensusVerdicts
        from judging.runs.webhooks import webhook_task_register
        from judging.tasks import delivery_attempt_task
        from rubrics.bundle.base import register_kind
        from rubrics.review.disagreements import disagreement_source_register
        from rubrics.selectors import label_source_register, verdict_source_register

        register_kind(LabelKind())
        webhook_task_register(delivery_attempt_task)
        label_source_register(LabelCounts())
        disagreement_source_register(ConsensusDisagreements())
        verdict_source_register(ConsensusVerdicts())

        # A team may name a judge a lead wrote (judging.judges), besides the built-in ones.
        from judging.judges.selectors import WrittenJudges
        from judging.strategies import strategy_source_register

        strategy_source_register(WrittenJudges())

        # What the home page shows a lead and an annotator of judging (sejury_web.home).
        from judging.home import home_sections_register

        home_sections_register()

        from judging.judges.testing import judge_tests_resume_unfinished
        from judging.runs.services import (
            batch_runs_resume_cancelled,
            rejections_resume_unfinished,
            runs_resume_unfinished,
        )
        from judging.runs.webhooks import deliveries_resume_unfinished
        from sejury_web.durable import JobKind, job_kind_register

        # What a starting worker finishes of what a killed worker left (sejury_web.durable).
        run_tasks = ("judging.start_run", "judging.prepare_bug", "judging.judge_patch")
        batch_round, webhook = ("judging.batch_round",), ("judging.deliver_webhook",)
        for kind in (
            JobKind("judging runs", run_tasks + batch_round, runs_resume_unfinished),
            JobKind(
                "sortings of rejected passing patches",
                ("judging.sort_rejections", "judging.sort_rejection"),
                rejections_resume_unfinished,
            ),
            JobKind("webhook deliveries", webhook, deliveries_resume_unfinished),
            JobKind("batch jobs of cancelled runs", batch_round, batch_runs_resume_cancelled),
            JobKind("judge tests", ("judging.judge_test",), judge_tests_resume_unfinished),
        ):
            job_kind_register(kind)
