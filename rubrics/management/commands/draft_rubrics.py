import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rubrics.models import DraftBatch, Rubric
from rubrics.review.services import RubricActionError, rubric_draft_request
from rubrics.selectors import (
    UNKNOWN_BUGS,
    UNKNOWN_DATASET,
    dataset_bugs_named,
    dataset_resolve,
    draft_batch_progress,
)

NO_WORKER = (
    "no draft has moved for {seconds:g} s: is a Celery worker running? Start one with "
    "`make run` or `.venv/bin/celery -A sejury_web worker`; the drafts stay queued meanwhile."
)


class Command(BaseCommand):
    help = "Queue LLM drafts of the rubrics of a dataset (bugs that have one keep it)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset name or slug")
        parser.add_argument("--variant", choices=Rubric.Variant.values, default="templated")
        parser.add_argument("--bugs", default="", help="comma-separated bug keys (default: all)")
        parser.add_argument("--provider", default="", help="gemini, openai or offline")
        parser.add_argument("--model", default="")
        parser.add_argument(
            "--reasoning",
            default="",
            help="a reasoning model's effort (minimal, low, medium, high) or a Gemini thinking "
            "budget in tokens (default: the model's own)",
        )
        parser.add_argument("--wait", action="store_true", help="follow the drafts until done")
        parser.add_argument(
            "--idle-timeout",
            type=float,
            default=60.0,
            help="with --wait: give up when nothing moves for this many seconds",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = dataset_resolve(options["dataset"])
        if dataset is None:
            raise CommandError(UNKNOWN_DATASET.format(name=options["dataset"]))
        keys = [key.strip() for key in options["bugs"].split(",")]
        bugs, missing = dataset_bugs_named(dataset, keys)
        if missing:
            raise CommandError(UNKNOWN_BUGS.format(keys=", ".join(missing)))
        try:  # the service refuses an empty batch, as it does for the page
            batch = rubric_draft_request(
                bugs=bugs,
                variant=options["variant"],
                actor=None,
                provider=options["provider"],
                model=options["model"],
                reasoning=options["reasoning"],
            )
        except RubricActionError as error:
            raise CommandError(str(error)) from None
        progress = draft_batch_progress(batch)
        self.stdout.write(
            f"Batch {batch.pk}: {progress.total} rubrics, {progress.drafting} queued for drafting"
        )
        if options["wait"]:
            self._follow(batch, idle_timeout=options["idle_timeout"])

    def _follow(self, batch: DraftBatch, *, idle_timeout: float) -> None:
        last, last_change = None, time.monotonic()
        while True:
            progress = draft_batch_progress(batch)
            state = (progress.drafted, progress.failed)
            if state != last:
                last, last_change = state, time.monotonic()
                self.stdout.write(
                    f"{progress.drafted + progress.failed}/{progress.total} "
                    f"({progress.drafted} drafted, {progress.failed} failed)"
                )
            if progress.done:
                for rubric in progress.rubrics:
                    if rubric.status == Rubric.Status.DRAFT_FAILED:
                        self.stderr.write(f"{rubric.bug.key}: {rubric.draft_error}")
                if progress.failed:
                    raise CommandError(f"{progress.failed} drafts failed (see above)")
                return
            if time.monotonic() - last_change > idle_timeout:
                raise CommandError(NO_WORKER.format(seconds=idle_timeout))
            time.sleep(1)
