"""Test judge configurations without human labels (REFINE, paper 002): build the quality
ladders of a dataset's bugs (or complete them), judge them with each configuration, and rank
the configurations by how well their scores keep the ladders' expected order.

    python manage.py refine --dataset demo --configs "s1b;s3;rubric@golden;s1b,s2,s3" --wait

``--dataset`` names the source dataset (its ladders are built or completed first, which is
idempotent) or a ladder dataset itself. Without ``--wait`` the command starts the runs and
prints the figures of what is judged so far.
"""

import json
import sys
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.models import JudgingRun
from judging.refine.export import refine_record
from judging.refine.selectors import ladder_runs, refine_ranking
from judging.refine.services import configurations_parse, refine_start
from judging.runs.services import RunError
from rubrics.ladders.operators import LEVELS
from rubrics.ladders.services import DERIVATION, LadderError, check_levels, ladders_build
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve

NO_WORKER = (
    "no Celery worker has started the runs after {seconds:g} s. Start one with `make run`, or "
    "`.venv/bin/celery -A sejury_web worker --pool threads --concurrency 8`; the runs stay "
    "queued and are judged when a worker starts."
)
STALLED = "the runs have not moved for {seconds:g} s: are the workers alive? They go on."
POLL_S = 1.0


def _levels(text: str) -> list[int]:
    try:
        return list(check_levels(int(part) for part in text.split(",") if part.strip()))
    except ValueError as error:
        raise CommandError(f"--levels: {error}") from None


class Command(BaseCommand):
    help = (
        "Build a dataset's quality ladders, judge them with each configuration and rank the "
        "configurations by their agreement with the expected order (REFINE)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", required=True, help="source or ladder dataset")
        parser.add_argument(
            "--configs",
            required=True,
            help='configurations separated by ";": a team, optionally @context, e.g. '
            '"s1b;s3;rubric@golden;s1b,s2,s3"',
        )
        parser.add_argument(
            "--levels", default=",".join(map(str, LEVELS)), help="levels to build and score"
        )
        parser.add_argument("--provider", default="", help="gemini, openai or offline")
        parser.add_argument("--model", default="")
        parser.add_argument("--wait", action="store_true", help="wait until every run ends")
        parser.add_argument("--worker-timeout", type=float, default=30.0)
        parser.add_argument("--stall-timeout", type=float, default=600.0)
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = dataset_resolve(options["dataset"])
        if dataset is None:
            raise CommandError(UNKNOWN_DATASET.format(name=options["dataset"]))
        levels = _levels(options["levels"])
        try:
            configs = configurations_parse(options["configs"])
            if dataset.derivation != DERIVATION:
                build = ladders_build(dataset=dataset, actor=None, levels=levels)
                ladder = build.ladder
                self._note(
                    f"Ladders of {dataset.name}: {build.bugs} bugs, {build.patches_added} new "
                    f"patches ({build.patches_kept} kept) in {ladder.name}."
                )
            else:
                ladder = dataset
            started = refine_start(
                ladder=ladder,
                configurations=configs,
                provider=options["provider"],
                model=options["model"],
                actor=None,
            )
        except (LadderError, RunError) as error:
            raise CommandError(str(error)) from None
        for run, new in started:
            self._note(f"{'Started' if new else 'Reusing'} run {run.pk}: {run.name or run.pk}")
        run_ids = [run.pk for run, _ in started]
        if options["wait"]:
            self._wait(run_ids, options["worker_timeout"], options["stall_timeout"])
        runs = ladder_runs(ladder, run_ids)
        ranking = refine_ranking(ladder, runs=runs, levels=levels)
        record = refine_record(ladder, ranking, levels)
        if options["format"] == "json":
            self.stdout.write(json.dumps(record, indent=2))
        else:
            self._table(record)

    def _note(self, text: str) -> None:
        print(text, file=sys.stderr)

    def _wait(self, run_ids: list[int], worker_timeout: float, stall_timeout: float) -> None:
        started = moved_at = time.monotonic()
        state: tuple[Any, ...] = ()
        while True:
            runs = JudgingRun.objects.filter(pk__in=run_ids)
            active = [run for run in runs if run.is_active]
            done = sum(run.judgments.exclude(status="pending").count() for run in runs)
            now = time.monotonic()
            if not active:
                return
            if (len(active), done) != state:
                state, moved_at = (len(active), done), now
                self._note(
                    f"{len(run_ids) - len(active)}/{len(run_ids)} runs done, {done} patches judged"
                )
            queued = all(run.status == JudgingRun.Status.QUEUED for run in active)
            if queued and now - started > worker_timeout:
                raise CommandError(NO_WORKER.format(seconds=worker_timeout))
            if stall_timeout and now - moved_at > stall_timeout:
                raise CommandError(STALLED.format(seconds=stall_timeout))
            time.sleep(POLL_S)

    def _table(self, record: dict[str, Any]) -> None:
        def figure(value: dict[str, float | None]) -> str:
            if value["value"] is None:
                return "—"
            if value["ci_lo"] is None:
                return f"{value['value']:.2f}"
            return f"{value['value']:.2f} [{value['ci_lo']:.2f}, {value['ci_hi']:.2f}]"

        self.stdout.write(f"{record['ladder']} (levels {', '.join(record['levels'])})")
        for row in record["configurations"]:
            member = f" (member of {','.join(row['member_of'])})" if row["member_of"] else ""
            means = "  ".join(
                f"L{level} {m['value']:.0f}" if m["value"] is not None else f"L{level} —"
                for level, m in row["level_means"].items()
            )
            self.stdout.write(
                f"{row['rank']:>2}. {row['config']}{member} · {row['provider']} · run {row['run']}"
                f"\n    alignment {figure(row['alignment'])}  τ-b {figure(row['tau_b'])}"
                f"  on {row['bugs']} bugs\n    mean score {means}"
            )
        for note in record["notes"]:
            self.stdout.write(note)
