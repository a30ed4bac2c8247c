"""Sort why a run rejected patches that pass their tests (paper 004 §7), then print the
themes per patch source:

    python manage.py rejection_themes --run ID [--wait]

The sorting runs on the Celery workers; ``--wait`` follows it to its end first. Without it
the counts are those of now. Nothing left to sort is not an error: the counts are printed.
"""

import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.models import JudgingRun
from judging.reports.rejections import ALL_SOURCES, RejectionThemes
from judging.reports.selectors import run_rejection_themes
from judging.runs.rejections import rejection_progress
from judging.runs.selectors import RunNotFound, run_get
from judging.runs.services import NothingToSort, RunError, run_rejection_themes_request
from sejury_web.llm import OFFLINE_MARKER

NO_WORKER = (
    "nothing has been sorted for {seconds:g} s: is a Celery worker running? Start one with "
    "`make run`, or `.venv/bin/celery -A sejury_web worker --pool threads`. The rows stay "
    "pending and are sorted when a worker starts."
)
OFFLINE_NOTE = f"Sorted by the {OFFLINE_MARKER}: a keyword rule over the justification."
POLL_S = 0.5


def table_lines(themes: RejectionThemes) -> list[str]:
    """The themes × sources table as aligned text: counts, then shares in brackets."""
    columns = [ALL_SOURCES, *themes.sources]
    rows = [["Theme", *columns]]
    for row in themes.rows:
        cells = [row.total, *(cell for _, cell in row.cells)]
        rows.append(
            [row.label, *(f"{c.patches} ({c.percent})" if c.patches else "0" for c in cells)]
        )
    rows.append(["Sorted", str(themes.sorted), *map(str, themes.sorted_by_source)])
    rows.append(["Rejected passing", str(themes.rejected), *map(str, themes.rejected_by_source)])
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


class Command(BaseCommand):
    help = (
        "Sort the justifications of the test-passing patches a run found INVALID into paper "
        "004's themes (on the Celery workers); print the themes per patch source."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", type=int, required=True, metavar="ID")
        parser.add_argument("--wait", action="store_true", help="follow the sorting to its end")
        parser.add_argument(
            "--worker-timeout",
            type=float,
            default=60.0,
            help="with --wait: give up when nothing was sorted for this many seconds",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run = run_get(run_id=options["run"])
        except RunNotFound as error:
            raise CommandError(str(error)) from None
        try:
            queued = run_rejection_themes_request(run=run, actor=None)
        except NothingToSort as error:
            self.stderr.write(str(error))
        except RunError as error:
            raise CommandError(str(error)) from None
        else:
            self.stderr.write(f"Run {run.pk}: {queued} rejected passing patches queued to sort.")
            if options["wait"]:
                self._wait(run, options["worker_timeout"])
        self._print(run_rejection_themes(run))

    def _wait(self, run: JudgingRun, timeout: float) -> None:
        last, since = None, time.monotonic()
        while True:
            progress = rejection_progress(run)
            if not progress.pending:
                return
            moved = (progress.done, progress.failed)
            if moved != last:
                last, since = moved, time.monotonic()
            elif time.monotonic() - since > timeout:
                raise CommandError(NO_WORKER.format(seconds=timeout))
            time.sleep(POLL_S)

    def _print(self, themes: RejectionThemes) -> None:
        run = themes.run.run
        versions = ", ".join(themes.prompt_versions) or themes.prompt_version
        self.stdout.write(
            f"Run {run.pk}: {themes.rejected} test-passing patches found INVALID; "
            f"{themes.sorted} sorted, {themes.failed} failed, {themes.pending} pending, "
            f"{themes.unsorted} not sorted (prompt {versions})."
        )
        if themes.sorted:
            for line in table_lines(themes):
                self.stdout.write(line)
        if themes.offline:
            self.stdout.write(OFFLINE_NOTE)
