"""``manage.py agreement_report``: the report page's data, as JSON or CSV, from the shell."""

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from judging.management.commands.agreement_report import (
    BAD_RESAMPLES,
    RUNS_AND_NO_RUNS,
)
from judging.models import Campaign, JudgingRun
from judging.reports.selectors import FOREIGN_RUN
from judging.runs.selectors import UNKNOWN_RUN
from rubrics.selectors import UNKNOWN_DATASET
from tests.judging.reports.factories import Small
from tests.rubrics.factories import DatasetFactory

pytestmark = pytest.mark.django_db


def run_command(*args: str) -> str:
    out = io.StringIO()
    call_command("agreement_report", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_json_on_stdout_with_the_runs_asked(small: Small) -> None:
    data = json.loads(
        run_command("--dataset", "Small", "--run", str(small.reference.pk), "--format", "json")
    )
    assert [run["id"] for run in data["runs"]] == [small.reference.pk]
    assert data["runs"][0]["offline"] is True
    assert data["humans"]["columns"]["b_clear"]["patches"]["value"] == 5
    assert data["intervals"]["resamples"] == 400


def test_several_runs_by_slug_and_the_default_runs(small: Small) -> None:
    both = json.loads(
        run_command("--dataset", "small", "--run", str(small.golden.pk), str(small.reference.pk))
    )
    assert [judge["run"] for judge in both["judges"]] == [small.golden.pk, small.reference.pk]
    default = json.loads(run_command("--dataset", "small"))
    assert [run["chosen_by_default"] for run in default["runs"]] == [True, True]
    humans_only = json.loads(run_command("--dataset", "small", "--no-runs"))
    assert humans_only["runs"] == []
    assert humans_only["judges"] == []


def test_the_same_data_as_the_page(small: Small, lead_client: Client) -> None:
    url = reverse("judging:report", args=["small"]) + f"?run={small.golden.pk}&format=json"
    page = json.loads(lead_client.get(url).content)
    command = json.loads(run_command("--dataset", "small", "--run", str(small.golden.pk)))
    assert page == command


def test_csv_to_a_file_and_a_campaign(small: Small, tmp_path: Path) -> None:
    campaign = Campaign.objects.create(dataset=small.dataset, name="None of them")
    target = tmp_path / "report.csv"
    call_command(
        "agreement_report", "--dataset", "small", "--campaign", str(campaign.pk),
        "--no-runs", "--format", "csv", "--output", str(target), "--resamples", "50",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert not (tmp_path / "report.csv.partial").exists()
    patches = next(
        r
        for r in rows
        if (r["section"], r["figure"], r["column"]) == ("humans", "patches", "labelled")
    )
    assert patches["value"] == "0"


def test_clear_errors(small: Small) -> None:
    with pytest.raises(CommandError, match=re.escape(UNKNOWN_DATASET.format(name="nope"))):
        run_command("--dataset", "nope")
    with pytest.raises(CommandError, match=UNKNOWN_RUN.format(run=987_654)):
        run_command("--dataset", "small", "--run", "987654")
    other = DatasetFactory(name="Other", slug="other")
    foreign = JudgingRun.objects.create(
        dataset=other, strategies=["rubric"], context="golden", provider="openai", model="m"
    )
    with pytest.raises(CommandError) as error:
        run_command("--dataset", "small", "--run", str(foreign.pk))
    assert str(error.value) == FOREIGN_RUN.format(
        run=foreign.pk, other=other, dataset=small.dataset
    )
    with pytest.raises(CommandError, match=RUNS_AND_NO_RUNS):
        run_command("--dataset", "small", "--run", str(small.golden.pk), "--no-runs")
    with pytest.raises(CommandError, match=BAD_RESAMPLES.format(resamples=0)):
        run_command("--dataset", "small", "--resamples", "0")


def test_the_command_and_the_page_do_not_import_scipy_stats_or_sqlalchemy() -> None:
    """scipy.stats takes a second to import (issue 27 item 9: the command's 4.5 s): the
    report needs none of it, only the plain definitions' τ-b and ρ, which import it. Nor
    SQLAlchemy, half a second more: only what connects to the SQLite broker or result store
    imports it (``sejury_web.broker``). Nor requests and jsonschema, 80 ms each: only a
    webhook call and an answer's check need them."""
    code = (
        "import sys, django; django.setup();"
        "import judging.management.commands.agreement_report, judging.reports.views;"
        "heavy = ('scipy.stats', 'krippendorff', 'sqlalchemy', 'requests', 'jsonschema');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stderr
