"""``manage.py import_swebench``: what it prints, and its errors."""

import io

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
