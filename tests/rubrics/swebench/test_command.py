"""``manage.py import_swebench``: what it prints, and its errors."""

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from rubrics.models import Patch
from tests.rubrics.swebench.helpers import FIXTURES

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_swebench", *args, stdout=out)
    return out.getvalue()


def fixture(name: str) -> str:
    return str(FIXTURES / name)


ARGS = (
    "--instances",
    fixture("instances.jsonl"),
    "--predictions",
    fixture("preds_gpt4.jsonl"),
    "--predictions",
    fixture("preds_llama.json"),
    "--results",
    fixture("gpt-4-0613.run1.json"),
    "--dataset",
    "SWE-bench Lite",
)


def test_the_command_imports_and_says_what_it_did() -> None:
    out = run(*ARGS).splitlines()
    assert out[0] == "Dataset 'SWE-bench Lite' (swe-bench-lite) created."
    assert "  bug: 4 created, 0 updated, 0 unchanged" in out
    assert "  patch: 4 created, 0 updated, 0 unchanged" in out
    notes = [line for line in out if line.startswith("  note: ")]
    assert notes[0] == (
        "  note: 2 predictions had no patch (an empty model_patch) and were not imported: "
        "SWE-Llama-13b 1, gpt-4-0613 1"
    )
    assert any("no results report for SWE-Llama-13b" in note for note in notes)
    assert Patch.objects.filter(tests_pass=True).count() == 1
    again = run(*ARGS).splitlines()
    assert again[0] == "Dataset 'SWE-bench Lite' (swe-bench-lite) unchanged."
    assert "  patch: 0 created, 0 updated, 4 unchanged" in again


def test_errors_fail_the_command_with_file_line_and_column() -> None:
    with pytest.raises(CommandError) as excinfo:
        run(
            "--instances",
            fixture("instances.jsonl"),
            "--predictions",
            fixture("preds_claude.json"),
            "--results",
            fixture("results_trailing_comma.json"),
            "--dataset",
            "X",
        )
    message = str(excinfo.value)
    assert message.startswith("nothing was imported:\n")
    assert (
        f"{fixture('results_trailing_comma.json')}, line 23, column 31: a trailing comma" in message
    )
    assert not Patch.objects.exists()


def test_a_missing_file_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="no such file"):
        run("--predictions", fixture("nope.jsonl"), "--dataset", "X")
    with pytest.raises(CommandError, match="give --instances, --predictions, or both"):
        run("--dataset", "X")


def test_a_folder_of_the_harness_logs_gives_each_model_its_reports() -> None:
    logs = FIXTURES / "harness" / "logs" / "run_evaluation" / "run-1"
    out = run(
        "--instances",
        fixture("instances.parquet"),
        "--predictions",
        fixture("preds_gpt4.jsonl"),
        "--predictions",
        fixture("preds_claude.json"),
        "--results",
        str(logs),
        "--results",
        fixture("harness/anthropic__claude-3-opus.run-1.json"),
        "--dataset",
        "SWE-bench Lite",
    )
    passes = {
        (source, key): tests_pass
        for source, key, tests_pass in Patch.objects.values_list("source", "bug__key", "tests_pass")
    }
    assert passes["gpt-4-0613", "psf__requests-2317"] is None  # infra_failure (report.json)
    assert passes["gpt-4-0613", "django__django-11099"] is False
    assert passes["anthropic/claude-3-opus", "astropy__astropy-12907"] is False  # error_ids
    assert passes["anthropic/claude-3-opus", "django__django-11133"] is None  # incomplete_ids
    assert f"  note: {logs}/gpt-4-0613/ (per-instance report) of gpt-4-0613: " in out
    failing = Patch.objects.get(key="django__django-11099@gpt-4-0613")
    assert failing.tests_status is not None
    assert failing.tests_status["FAIL_TO_PASS"]["failure"] == [
        "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"
    ]


def test_a_folder_without_reports_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"no report\.json in this folder"):
        run(
            "--predictions",
            fixture("preds_gpt4.jsonl"),
            "--results",
            str(tmp_path),
            "--dataset",
            "X",
        )
