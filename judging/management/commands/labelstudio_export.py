"""Write a campaign's (or a dataset's) patches as Label Studio tasks, and the labelling
config that shows them."""

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.annotations.labelstudio.export import config_with_rubric, labelling_config, tasks_json
from judging.management.commands._labelstudio_scope import scope_arguments, scope_from
from judging.runs.selectors import RunNotFound, run_get

OTHER_RUN = "run {run} judged dataset {other!r}, not {dataset!r}"


class Command(BaseCommand):
    help = (
        "Write the patches of a campaign (or of a dataset) as Label Studio tasks (JSON) to FILE"
        " or standard output; --config writes the labelling config (XML) to match."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        scope_arguments(parser)
        parser.add_argument(
            "--with-predictions",
            type=int,
            metavar="RUN",
            help="add each patch's verdict of judging run RUN as a Label Studio prediction"
            " (for leads: never give verdicts to annotators)",
        )
        parser.add_argument("--output", type=Path, metavar="FILE", help="default: stdout")
        parser.add_argument("--config", type=Path, metavar="FILE", help="the labelling config")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset, campaign = scope_from(options)
        run = None
        if options["with_predictions"] is not None:
            try:
                run = run_get(run_id=options["with_predictions"])
            except RunNotFound as error:
                raise CommandError(str(error)) from None
            if run.dataset_id != dataset.pk:
                message = OTHER_RUN.format(run=run.pk, other=run.dataset.name, dataset=dataset.name)
                raise CommandError(message)
        text = tasks_json(dataset=dataset, campaign=campaign, run=run)
        if options["config"] is not None:
            config = labelling_config(with_rubric=config_with_rubric(campaign))
            options["config"].write_text(config, encoding="utf-8")
            self.stderr.write(f"Wrote {options['config']}")
        output: Path | None = options["output"]
        if output is None:
            self.stdout.write(text, ending="")
            return
        output.write_text(text, encoding="utf-8")
        self.stderr.write(f"Wrote {output}")
