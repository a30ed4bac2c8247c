import logging

from django.apps import AppConfig

log = logging.getLogger(__name__)


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging, annotations and agreement"

    def ready(self) -> None:
        # Importing them registers what the offline model answers to each strategy's prompts
        # and to the rejection-theme prompt.
        import judging.runs.rejections_offline
        import judging.strategies  # noqa: F401
        from judging.annotations.bundle import LabelKind
        from judging.annotations.selectors import LabelCounts
        from judging.consensus.rubric_feedback import ConsensusDisagreements
        from judging.runs.webhooks import webhook_task_register
        from judging.tasks import delivery_attempt_task
        from rubrics.bundle.base import register_kind
        from rubrics.review.disagreements import disagreement_source_register
        from rubrics.selectors import label_source_register

        register_kind(LabelKind())
        webhook_task_register(delivery_attempt_task)
        label_source_register(LabelCounts())
        disagreement_source_register(ConsensusDisagreements())

        from celery.signals import worker_ready

        worker_ready.connect(resume_unfinished_runs, weak=False, dispatch_uid="judging.resume")


def resume_unfinished_runs(**_: object) -> None:
    """A worker starting finishes what a killed worker left: every queued or running run,
    every run whose rejected passing patches were waiting to be sorted, and every webhook
    call still to be made."""
    from judging.runs.services import rejections_resume_unfinished, runs_resume_unfinished
    from judging.runs.webhooks import deliveries_resume_unfinished

    resumed = runs_resume_unfinished()
    if resumed:
        log.info("resumed judging runs %s", resumed)
    sorting = rejections_resume_unfinished()
    if sorting:
        log.info("resumed sorting the rejected passing patches of runs %s", sorting)
    deliveries = deliveries_resume_unfinished()
    if deliveries:
        log.info("resumed webhook deliveries %s", deliveries)
