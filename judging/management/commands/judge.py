"""Judge a dataset's patches with a team of strategies, from the shell; optionally follow it.

Before a new run starts, its pre-flight counts the patches that lack what the team needs in
the context (a golden or draft rubric, a reference fix): if some do, the command stops and
says which, unless ``--only-ready`` asks it to judge the others; if all do, no run starts.

``--batch`` judges through the provider's batch API (``judging.runs.batch``): half the price,
answers within 24 hours a round; a server without one is refused before the run starts.

``--resume ID`` queues a run's pending patches again; with ``--retry-failed`` its failed ones
too; with ``--stale`` it re-judges the rubric judge's stale verdicts (judged with an older
revision of the rubric than today's golden one), and ``--wait`` then lists what flipped.
"""

import time
from argparse import ArgumentParser
from itertools import islice
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.models import Context, JudgingRun, PatchJudgment
from judging.runs.export import verdict_records
from judging.runs.forecast import dollars
from judging.runs.selectors import (
    RunNotFound,
    RunProgress,
    run_get,
    run_left_out,
    run_progress,
)
from judging.runs.services import (
    RunError,
    RunNotReady,
    run_create,
    run_plan,
    run_rejudge_stale,
    run_resume,
)
from judging.runs.stale import rejudge_summary, stale_count
from judging.strategies.reducers import DEFAULT_REDUCER, REDUCERS
from rubrics.selectors import (
    UNKNOWN_DATASET,
    UNKNOWN_PATCHES,
    dataset_patches_named,
    dataset_resolve,
)
from sejury_web.llm import OFFLINE_MARKER, Provider

NEW_RUN_NEEDS = "give --dataset, --team and --context to start a run (or --resume ID)"
RESUME_ALONE = "--resume takes no {options}: a resumed run keeps its own"
RETRY_NEEDS_RESUME = "--retry-failed only goes with --resume"
STALE_NEEDS_RESUME = "--stale only goes with --resume"
STALE_OR_RETRY = "--stale and --retry-failed are two actions: run one, then the other"
NO_WORKER = (
    "run {run} is still queued after {seconds:g} s: no Celery worker has picked it up. Start "
    "one with `make run`, or `.venv/bin/celery -A sejury_web worker --pool threads "
    "--concurrency 8`. The run stays queued and is judged when a worker starts (or when busy "
    "workers reach it)."
)
STALLED = (
    "run {run} has not moved for {seconds:g} s: are its workers alive? It stays running; a "
    "worker that starts resumes it."
)
INTERRUPTED = (
    "Stopped waiting; run {run} goes on in the workers. Cancel it on its page, or export it "
    "when it is done: `python manage.py export_verdicts --run {run} --format csv`."
)
CANCELLED = "run {run} was cancelled"
# How to judge the ready patches of a run the service refused (``RunNotReady``), said after
# its message.
ONLY_READY = "Pass --only-ready to judge the {ready} other patch{plural}."
LEFT_OUT = "Left out {missing} of {total} patches: {lacks}."
OFFLINE_NOTE = f"The provider is offline: every answer comes from the {OFFLINE_MARKER}."
DRY_RUN_ALONE = "--dry-run starts nothing: it goes without --resume and --wait"
DRY_RUN = (
    "Forecast of {patches} patch{plural} of {bugs} bug{bugs_plural} of {dataset!r}, judged by "
    "{team} with context {context} on {provider}/{model}: nothing was sent, no run was "
    "created."
)
DRY_RUN_NOT_READY = (
    "{missing} of {total} patches lack what the team needs ({lacks}): the forecast counts "
    "the {ready} ready ones, which --only-ready judges."
)
FORECAST_COLUMNS = ("strategy", "calls", "cached", "input tokens", "output tokens", "ordinary",
                    "batch")  # fmt: skip

# The contexts a lead can ask for; 'revision' belongs to rubric previews.
CONTEXTS = [context for context in Context.values if context != Context.REVISION]
DEFAULT_SCALE = (0.0, 100.0)
PRINT_EVERY_S = 2.0
POLL_S = 1.0
FAILURES_SHOWN = 5
INTERRUPT_EXIT = 130  # what a shell reports for a program stopped by Ctrl-C


def forecast_lines(forecast: dict[str, Any]) -> list[str]:
    """A forecast (``Forecast.as_dict()``) as a table by strategy, its total, and its notes."""
    rows = [
        (
            row["strategy"],
            f"{row['calls']:,}",
            f"{row['cached_calls']:,}",
            f"{row['input_tokens']:,}",
            f"{row['output_tokens']:,}",
            dollars(row["cost_usd"]),
            dollars(row["batch_cost_usd"]),
        )
        for row in [*forecast["strategies"], forecast["total"]]
    ]
    widths = [max(len(cells[n]) for cells in [FORECAST_COLUMNS, *rows]) for n in range(7)]

    def line(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        rest = "  ".join(
            cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)
        )
        return f"  {first}  {rest}"

    lines = [line(FORECAST_COLUMNS), *(line(cells) for cells in rows)]
    lines.append(f"Price: {forecast['price_note']}.")
    wait = forecast["batch_wait"]
    lines.append(f"Batch: the same requests at the provider's batch price, answered {wait}.")
    lines += [f"  - {note}." for note in forecast["notes"]]
    expected = [
        f"{purpose} {value['tokens']:.0f} ("
        + (f"mean of {value['measured_calls']}" if value["measured_calls"] else "default")
        + ")"
        for purpose, value in forecast["expected_output_tokens"].items()
    ]
    lines.append(f"  - expected output tokens of one call: {', '.join(expected)}.")
    return lines


def progress_line(progress: RunProgress) -> str:
    return (
        f"{progress.finished}/{progress.total} judged, {progress.failed} failed, "
        f"{progress.provider_calls} calls"
    )


def summary_lines(run: JudgingRun, progress: RunProgress) -> list[str]:
    """What a finished (or cancelled) run came to."""
    wall = "never started" if progress.wall_s is None else f"{progress.wall_s:.1f} s"
    cost = "unknown price" if progress.cost_usd is None else f"${progress.cost_usd:.4f}"
    lines = [
        f"Run {run.pk} {run.get_status_display().lower()} ({wall}): {progress.valid} VALID, "
        f"{progress.invalid} INVALID, {progress.failed} failed, {progress.pending} pending, "
        f"of {progress.total} patches.",
        f"{progress.provider_calls} provider calls, {progress.input_tokens} input and "
        f"{progress.output_tokens} output tokens, {cost}.",
    ]
    if run.provider == Provider.OFFLINE:
        lines.append(OFFLINE_NOTE)
    return lines


class Command(BaseCommand):
    help = (
        "Judge a dataset's patches with a team of strategies on the Celery workers "
        "(or resume a run); with --wait, follow the run to its end."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", help="dataset name or slug")
        parser.add_argument("--team", help="strategies, comma-separated, e.g. rubric,s1b,s3")
        parser.add_argument("--context", choices=CONTEXTS, help="what the judges are shown")
        parser.add_argument("--patches", default="", help="comma-separated keys (default: all)")
        parser.add_argument("--provider", default="", help="gemini, openai or offline")
        parser.add_argument("--model", default="")
        parser.add_argument(
            "--batch",
            action="store_true",
            help="through the provider's batch API: half the price, each round of calls "
            "answered within 24 hours",
        )
        parser.add_argument(
            "--reasoning",
            default="",
            help="a reasoning model's effort (minimal, low, medium, high) or a Gemini thinking "
            "budget in tokens (default: the model's own)",
        )
        parser.add_argument(
            "--scale", nargs=2, type=float, metavar=("LO", "HI"), help="default: 0 100"
        )
        parser.add_argument(
            "--threshold", type=float, help="VALID from this score on (default: mid-scale)"
        )
        parser.add_argument(
            "--reducer",
            choices=list(REDUCERS),
            help="how the members' scores become the team's (default: mean)",
        )
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--only-ready",
            action="store_true",
            help="judge only the patches that have what the team needs in the context (a "
            "golden or draft rubric, a reference fix); without it, a run where some lack it "
            "is not started",
        )
        parser.add_argument("--resume", type=int, metavar="ID", help="re-queue a run's patches")
        parser.add_argument(
            "--retry-failed", action="store_true", help="with --resume: judge failed ones again"
        )
        parser.add_argument(
            "--stale",
            action="store_true",
            help="with --resume: judge the stale rubric verdicts again (only the members that "
            "read the rubric: the rubric judge, a written judge showing it)",
        )
        parser.add_argument("--wait", action="store_true", help="follow the run to its end")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the pre-flight and the cost forecast (calls, tokens, dollars ordinary "
            "and batch, by strategy) of the run, and create nothing",
        )
        parser.add_argument(
            "--worker-timeout",
            type=float,
            default=30.0,
            help="with --wait: give up when no worker has started the run after this many s",
        )
        parser.add_argument(
            "--stall-timeout",
            type=float,
            default=600.0,
            help="with --wait: give up when a running run has not moved for this many s (0: never)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["dry_run"]:
            if options["resume"] is not None or options["wait"]:
                raise CommandError(DRY_RUN_ALONE)
            self._dry_run(self._settings(options))
            return
        run = self._resume(options) if options["resume"] is not None else self._create(options)
        if options["wait"]:
            self._follow(
                run.pk,
                worker_timeout=options["worker_timeout"],
                stall_timeout=options["stall_timeout"],
            )
            if options["stale"]:
                self._flips(run_get(run_id=run.pk))

    def _settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """A new run's settings from the options, as ``run_create`` and ``run_plan`` take them."""
        if options["retry_failed"]:
            raise CommandError(RETRY_NEEDS_RESUME)
        if options["stale"]:
            raise CommandError(STALE_NEEDS_RESUME)
        if not (options["dataset"] and options["team"] and options["context"]):
            raise CommandError(NEW_RUN_NEEDS)
        dataset = dataset_resolve(options["dataset"])
        if dataset is None:
            raise CommandError(UNKNOWN_DATASET.format(name=options["dataset"]))
        patches = None
        keys = [key.strip() for key in options["patches"].split(",") if key.strip()]
        if keys:
            patches, missing = dataset_patches_named(dataset, keys)
            if missing:
                raise CommandError(
                    UNKNOWN_PATCHES.format(keys=", ".join(missing), dataset=dataset.name)
                )
        lo, hi = options["scale"] or DEFAULT_SCALE
        threshold = options["threshold"]
        return {
            "dataset": dataset,
            "patches": patches,
            "strategies": options["team"],
            "context": options["context"],
            "provider": options["provider"],
            "model": options["model"],
            "reasoning": options["reasoning"],
            "threshold": (lo + hi) / 2 if threshold is None else threshold,
            "scale_lo": lo,
            "scale_hi": hi,
            "reducer": options["reducer"] or DEFAULT_REDUCER,
        }

    def _create(self, options: dict[str, Any]) -> JudgingRun:
        settings = self._settings(options)
        dataset = settings["dataset"]
        try:
            run = run_create(
                **settings,
                actor=None,
                name=options["name"],
                only_ready=options["only_ready"],
                batch=options["batch"],
            )
        except RunNotReady as error:
            ready = error.preflight.ready
            if not ready:
                raise CommandError(str(error)) from None
            plural = "" if ready == 1 else "es"
            only_ready = ONLY_READY.format(ready=ready, plural=plural)
            raise CommandError(f"{error} {only_ready}") from None
        except RunError as error:
            raise CommandError(str(error)) from None
        left_out = run_left_out(run)
        if left_out:
            self.stdout.write(
                LEFT_OUT.format(missing=left_out.count, total=left_out.total, lacks=left_out.lacks)
            )
        total = run_progress(run).total
        self._describe(run, f"Run {run.pk}: {total} patches of {dataset.name!r}")
        return run

    def _dry_run(self, settings: dict[str, Any]) -> None:
        """The run's pre-flight and forecast; nothing is created, nothing is sent."""
        try:
            plan, forecast = run_plan(**settings)
        except RunError as error:  # RunNotReady too: no patch is ready
            raise CommandError(str(error)) from None
        preflight = plan.preflight
        self.stdout.write(
            DRY_RUN.format(
                patches=forecast.patches,
                plural="" if forecast.patches == 1 else "es",
                bugs=forecast.bugs,
                bugs_plural="" if forecast.bugs == 1 else "s",
                dataset=settings["dataset"].name,
                team=", ".join(plan.team),
                context=settings["context"],
                provider=forecast.provider,
                model=forecast.model,
            )
        )
        if preflight.missing:
            self.stdout.write(
                DRY_RUN_NOT_READY.format(
                    missing=preflight.missing,
                    total=preflight.total,
                    lacks=preflight.summary(),
                    ready=preflight.ready,
                )
            )
        self.stdout.write("\n".join(forecast_lines(forecast.as_dict())))

    def _resume(self, options: dict[str, Any]) -> JudgingRun:
        given = [
            f"--{name.replace('_', '-')}"
            for name in (
                "dataset",
                "team",
                "context",
                "patches",
                "provider",
                "model",
                "reasoning",
                "name",
                "only_ready",
                "batch",
            )
            if options[name]
        ]
        given += [
            f"--{name}" for name in ("scale", "threshold", "reducer") if options[name] is not None
        ]
        if given:
            raise CommandError(RESUME_ALONE.format(options=", ".join(given)))
        try:
            run = run_get(run_id=options["resume"])
        except RunNotFound as error:
            raise CommandError(str(error)) from None
        if options["stale"]:
            return self._rejudge(run, retry_failed=options["retry_failed"])
        # Counted before: eager tasks (and fast workers) may judge them all before we print.
        before = run_progress(run)
        queued = before.pending + (before.failed if options["retry_failed"] else 0)
        try:
            run = run_resume(actor=None, run=run, retry_failed=options["retry_failed"])
        except RunError as error:
            raise CommandError(str(error)) from None
        self._describe(run, f"Run {run.pk} resumed: {queued} of {before.total} patches queued")
        return run

    def _rejudge(self, run: JudgingRun, *, retry_failed: bool) -> JudgingRun:
        if retry_failed:
            raise CommandError(STALE_OR_RETRY)
        stale = stale_count(run)  # counted before, as in _resume
        try:
            run = run_rejudge_stale(actor=None, run=run)
        except RunError as error:
            raise CommandError(str(error)) from None
        self._describe(
            run,
            f"Run {run.pk}: the stale rubric verdicts on {stale} patches queued again "
            "(the other members' results are kept)",
        )
        return run

    def _flips(self, run: JudgingRun) -> None:
        """What re-judging changed: counts, then each verdict that flipped and why."""
        summary = rejudge_summary(run)
        if summary is None:
            return
        team, member = summary.flipped, summary.member_flipped
        self.stdout.write(
            f"Re-judged {summary.rejudged}: {team} team verdict{'' if team == 1 else 's'} and "
            f"{member} member verdict{'' if member == 1 else 's'} flipped."
        )
        for flip in summary.flips:
            revisions = f"r{flip.old_revision} → r{flip.new_revision}"
            self.stdout.write(
                f"  {flip.patch_key}: team {flip.old_verdict} → {flip.new_verdict or '-'}, "
                f"{flip.strategy} {flip.old_member_verdict} → {flip.new_member_verdict or '-'} "
                f"(rubric {revisions}: {flip.reason})"
            )
        if summary.more:
            self.stdout.write(f"  and {summary.more} more.")

    def _describe(self, run: JudgingRun, what: str) -> None:
        reduced = "" if run.reducer == DEFAULT_REDUCER else f"; team score: {run.reducer}"
        self.stdout.write(
            f"{what}, judged by {', '.join(run.strategies)} with context {run.context}, "
            f"on {run.provider}/{run.model} (VALID from {run.threshold:g} on "
            f"{run.scale_lo:g}–{run.scale_hi:g}{reduced})."
        )
        if run.provider == Provider.OFFLINE:
            self.stdout.write(OFFLINE_NOTE)

    def _follow(self, run_id: int, *, worker_timeout: float, stall_timeout: float) -> None:
        """Print progress until the run ends; raise if it was cancelled or nobody judges it."""
        started = time.monotonic()
        printed, printed_at = "", float("-inf")
        state: tuple[Any, ...] = ()
        moved_at = started
        try:
            while True:
                run = run_get(run_id=run_id)
                progress = run_progress(run)
                now = time.monotonic()
                line = progress_line(progress)
                if line != printed and (now - printed_at >= PRINT_EVERY_S or not run.is_active):
                    self.stdout.write(line)
                    printed, printed_at = line, now
                if not run.is_active:
                    self._summarize(run, progress)
                    return
                if (run.status, progress.finished, progress.provider_calls) != state:
                    state, moved_at = (run.status, progress.finished, progress.provider_calls), now
                if run.status == JudgingRun.Status.QUEUED and now - started > worker_timeout:
                    raise CommandError(NO_WORKER.format(run=run_id, seconds=worker_timeout))
                running = run.status == JudgingRun.Status.RUNNING
                # A batch round may wait hours for the provider without moving.
                stalled = stall_timeout and not run.batch and now - moved_at > stall_timeout
                if running and stalled:
                    raise CommandError(STALLED.format(run=run_id, seconds=stall_timeout))
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            raise CommandError(INTERRUPTED.format(run=run_id), returncode=INTERRUPT_EXIT) from None

    def _summarize(self, run: JudgingRun, progress: RunProgress) -> None:
        self.stdout.write("\n".join(summary_lines(run, progress)))
        if progress.failed:
            shown = min(progress.failed, FAILURES_SHOWN)
            self.stdout.write(f"Failed patches ({shown} of {progress.failed}):")
            failed = verdict_records(run, status=PatchJudgment.Status.FAILED)
            for record in islice(failed, FAILURES_SHOWN):
                self.stdout.write(f"  {record['patch']}: {record['error']}")
        self.stdout.write(
            f"Verdicts: `python manage.py export_verdicts --run {run.pk} --format csv`"
        )
        if run.status == JudgingRun.Status.CANCELLED:
            raise CommandError(CANCELLED.format(run=run.pk))
