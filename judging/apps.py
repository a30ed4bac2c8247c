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
    every run whose rejected passing patches were waiting to be sorted, every webhook call
    still to be made, and the batch jobs of cancelled runs."""
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
    cancelled = batch_runs_resume_cancelled()
    if cancelled:
        log.info("resumed cancelling the batch jobs of runs %s", cancelled)


def batch_runs_resume_cancelled() -> list[int]:
    """Poll on the batch jobs of cancelled runs (and of runs gone on with ordinary calls)
    until what they answered is stored (active batch runs are resumed with the others)."""
    from judging.runs.batch import batch_runs_open
    from judging.tasks import batch_round_advance_task
    from sejury_web.durable import enqueue_on_commit

    runs = batch_runs_open()
    for run_id, generation in runs:
        enqueue_on_commit(batch_round_advance_task, run_id, generation)
    return [run_id for run_id, _generation in runs]
