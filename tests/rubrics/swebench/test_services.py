"""SWE-bench instances, predictions and results in: the mapping, the keys, tests_pass from
each report, and messy files refused (with file, line and column) or imported as given."""

import json

import pytest

from rubrics.models import Bug, BundleImport, Dataset, Patch
from rubrics.swebench.read import SourceError
from rubrics.swebench.services import SwebenchImportError, patch_key, problem_title
from tests.rubrics.swebench.helpers import FIXTURES, INSTANCE_IDS, as_text, run_import

pytestmark = pytest.mark.django_db


def fixture_lines(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def errors_of(**kwargs: object) -> list[SourceError]:
    with pytest.raises(SwebenchImportError) as excinfo:
        run_import(**kwargs)  # type: ignore[arg-type]
    assert not Bug.objects.exists()
    assert not Patch.objects.exists()
    return excinfo.value.errors  # type: ignore[return-value]


def test_instances_become_bugs_with_everything_else_in_the_metadata() -> None:
    summary = run_import(instances="instances.jsonl")
    assert summary.bundle.counts["bug"].created == 4
    bug = Bug.objects.get(key="django__django-11099")
    given = fixture_lines("instances.jsonl")[1]
    assert bug.description == given["problem_statement"]
    assert bug.reference_patch == given["patch"]
    assert bug.title == "UsernameValidator allows trailing newline in usernames"
    assert bug.language == "python"
    assert bug.metadata == {
        name: value
        for name, value in given.items()
        if name not in ("instance_id", "problem_statement", "patch")
    }
    assert {"repo", "base_commit", "version", "FAIL_TO_PASS", "PASS_TO_PASS"} <= set(bug.metadata)
    assert bug.metadata["test_patch"] == given["test_patch"]
    assert bug.metadata["hints_text"].startswith("Use \\Z instead of $")


def test_hints_never_reach_a_judge() -> None:
    from judging.models import Context, JudgingRun
    from judging.runs.cases import case_for

    run_import(predictions=("preds_gpt4.jsonl",))
    patch = Patch.objects.select_related("bug").get(bug__key="django__django-11099")
    case = case_for(JudgingRun(dataset=patch.dataset, context=Context.NONE), patch)
    assert "\\Z instead of $" in patch.bug.metadata["hints_text"]
    assert all("instead of $ in both" not in str(value) for value in vars(case).values())


def test_predictions_become_patches_keyed_by_instance_and_source() -> None:
    summary = run_import(predictions=("preds_gpt4.jsonl", "preds_claude.json", "preds_llama.json"))
    # gpt-4: 3 of 4 (one empty); claude: 3 (a JSON object keyed by instance id); llama: 1 of 2.
    assert summary.bundle.counts["patch"].created == 7
    assert summary.empty_patches == 2
    assert any("2 predictions had no patch" in note for note in summary.notes)
    keys = set(Patch.objects.values_list("key", flat=True))
    assert "django__django-11099@gpt-4-0613" in keys
    assert "django__django-11099@SWE-Llama-13b" in keys
    claude = patch_key("astropy__astropy-12907", "anthropic/claude-3-opus")
    assert claude in keys
    assert "/" not in claude
    assert claude.startswith("astropy__astropy-12907@")
    patch = Patch.objects.get(key="django__django-11099@gpt-4-0613")
    given = fixture_lines("preds_gpt4.jsonl")[1]
    assert patch.diff == given["model_patch"]
    assert patch.diff.startswith("\n")
    assert patch.source == "gpt-4-0613"
    assert patch.bug.key == "django__django-11099"
    assert patch.tests_pass is None  # no results report


def test_a_patch_that_does_not_apply_is_imported_as_given() -> None:
    run_import(predictions=("preds_gpt4.jsonl",))
    patch = Patch.objects.get(key="psf__requests-2317@gpt-4-0613")
    assert patch.diff == fixture_lines("preds_gpt4.jsonl")[3]["model_patch"]
    notes = BundleImport.objects.get().summary["notes"]
    assert any("recounted" in note for note in notes)  # its hunk's counts were wrong


def test_importing_the_same_files_twice_changes_nothing() -> None:
    files = {"predictions": ("preds_gpt4.jsonl", "preds_claude.json")}
    first = run_import(results=("gpt-4-0613.run1.json",), **files)  # type: ignore[arg-type]
    before = list(Patch.objects.order_by("key").values())
    again = run_import(results=("gpt-4-0613.run1.json",), **files)  # type: ignore[arg-type]
    assert first.bundle.dataset_created
    assert not again.bundle.dataset_created
    assert again.bundle.unchanged
    assert {c.created + c.updated for c in again.bundle.counts.values()} == {0}
    assert list(Patch.objects.order_by("key").values()) == before
    assert Dataset.objects.count() == 1


def test_the_run_report_sets_tests_pass_true_false_or_null() -> None:
    summary = run_import(predictions=("preds_gpt4.jsonl",), results=("gpt-4-0613.run1.json",))
    passes = dict(Patch.objects.values_list("bug__key", "tests_pass"))
    assert passes == {
        "astropy__astropy-12907": True,  # resolved_ids
        "django__django-11099": False,  # unresolved_ids
        "psf__requests-2317": False,  # error_ids: the patch did not apply
    }
    assert any(
        "tests pass for 1, fail for 2 (error_ids 1), not evaluated for 0, not in the report for 0"
        in note
        for note in summary.notes
    )


def test_the_experiments_results_json_sets_tests_pass() -> None:
    run_import(predictions=("preds_claude.json",), results=("results.json",))
    passes = dict(Patch.objects.values_list("bug__key", "tests_pass"))
    assert passes == {
        "astropy__astropy-12907": False,  # no_apply
        "django__django-11099": True,  # resolved
        "django__django-11133": None,  # generated, never evaluated (no logs)
    }


def test_the_compact_results_json_means_every_other_prediction_failed() -> None:
    compact = {"no_generation": [], "no_logs": ["django__django-11133"], "resolved": []}
    compact["resolved"] = ["astropy__astropy-12907"]
    run_import(
        predictions=("preds_claude.json",),
        results=("results.json",),
        given={"results.json": json.dumps(compact).encode()},
    )
    passes = dict(Patch.objects.values_list("bug__key", "tests_pass"))
    assert passes == {
        "astropy__astropy-12907": True,
        "django__django-11099": False,  # not named: evaluated, not resolved
        "django__django-11133": None,  # no_logs: not evaluated
    }


def test_a_per_instance_report_json_sets_tests_pass() -> None:
    report = {
        "astropy__astropy-12907": {"patch_successfully_applied": True, "resolved": False},
        "django__django-11099": {"patch_successfully_applied": True, "resolved": True},
    }
    run_import(
        predictions=("preds_gpt4.jsonl",),
        results=("report.json",),
        given={"report.json": json.dumps(report).encode()},
    )
    passes = dict(Patch.objects.values_list("bug__key", "tests_pass"))
    assert passes["astropy__astropy-12907"] is False
    assert passes["django__django-11099"] is True
    assert passes["psf__requests-2317"] is None  # not in the report


def test_with_several_models_a_report_is_of_the_model_its_file_names() -> None:
    summary = run_import(
        predictions=("preds_gpt4.jsonl", "preds_claude.json"),
        results=("gpt-4-0613.run1.json",),
    )
    rows = Patch.objects.values_list("source", "bug__key", "tests_pass")
    claude = {key: passes for source, key, passes in rows if source != "gpt-4-0613"}
    gpt4 = {key: passes for source, key, passes in rows if source == "gpt-4-0613"}
    assert set(claude.values()) == {None}  # the gpt-4 report says nothing of claude
    assert gpt4["astropy__astropy-12907"] is True
    assert any("no results report for anthropic/claude-3-opus" in note for note in summary.notes)


def test_the_harness_file_name_of_a_model_with_a_slash_matches() -> None:
    data = (FIXTURES / "results.json").read_bytes()
    name = "anthropic__claude-3-opus.eval-7.json"
    run_import(
        predictions=("preds_gpt4.jsonl", "preds_claude.json"),
        results=(name,),
        given={name: data},
    )
    passes = dict(
        Patch.objects.filter(source="anthropic/claude-3-opus").values_list("bug__key", "tests_pass")
    )
    assert passes["django__django-11099"] is True
    assert not Patch.objects.filter(source="gpt-4-0613", tests_pass__isnull=False).exists()


def test_a_report_of_no_named_model_is_refused_when_there_are_several() -> None:
    errors = errors_of(
        predictions=("preds_gpt4.jsonl", "preds_claude.json"), results=("results.json",)
    )
    assert len(errors) == 1
    assert errors[0].file == "results.json"
    assert "does not say which one it is of" in errors[0].message


def test_a_results_file_with_a_trailing_comma_is_refused_with_line_and_column() -> None:
    errors = errors_of(predictions=("preds_claude.json",), results=("results_trailing_comma.json",))
    text = (FIXTURES / "results_trailing_comma.json").read_text()
    lines = text.splitlines()
    line = len(lines) - 2  # the last element of "resolved", before "]" and "}"
    assert lines[line - 1].endswith('11099",')
    assert [(e.file, e.line, e.column) for e in errors] == [
        ("results_trailing_comma.json", line, len('        "django__django-11099",'))
    ]
    assert "trailing comma" in errors[0].message
    assert str(errors[0]).startswith(f"results_trailing_comma.json, line {line}, column 31:")


def test_a_prediction_of_an_unknown_instance_is_refused_with_file_and_line() -> None:
    errors = errors_of(predictions=("preds_unknown.jsonl",))
    assert [(e.file, e.line, e.field) for e in errors] == [
        ("preds_unknown.jsonl", 2, "instance_id")
    ]
    assert "unknown instance 'django__django-99999'" in errors[0].message
    assert "neither in the instances file nor in the dataset" in errors[0].message


def test_predictions_may_name_instances_already_in_the_dataset() -> None:
    run_import(instances="instances.jsonl")
    summary = run_import(instances=None, predictions=("preds_gpt4.jsonl",))
    assert summary.bundle.counts["patch"].created == 3


def test_an_array_of_instances_pretty_printed_is_read_with_its_lines() -> None:
    broken = json.loads((FIXTURES / "instances.json").read_text())
    broken[1]["patch"] = "I could not produce a diff."
    text = json.dumps(broken, indent=2)
    errors = errors_of(instances="instances.json", given={"instances.json": text.encode()})
    start = text.splitlines().index("  {", 2) + 1  # the second element's line
    assert [(e.file, e.line, e.field) for e in errors] == [("instances.json", start, "patch")]
    assert "not a unified diff" in errors[0].message


def test_invalid_json_lines_are_refused_with_line_and_column() -> None:
    lines = (FIXTURES / "preds_gpt4.jsonl").read_bytes().splitlines(keepends=True)
    lines[2] = b'{"instance_id": "django__django-11133", "model_patch": "",}\n'
    errors = errors_of(
        predictions=("preds_gpt4.jsonl",), given={"preds_gpt4.jsonl": b"".join(lines)}
    )
    column = lines[2].index(b",}") + 1
    assert [(e.file, e.line, e.column) for e in errors] == [("preds_gpt4.jsonl", 3, column)]
    assert "trailing comma before '}'" in errors[0].message


def test_a_trailing_comma_in_an_array_of_predictions_is_refused() -> None:
    text = (FIXTURES / "preds_llama.json").read_text().rstrip()
    broken = text[:-1].rstrip() + ",\n]\n"
    errors = errors_of(
        predictions=("preds_llama.json",), given={"preds_llama.json": broken.encode()}
    )
    assert [(e.line, e.column) for e in errors] == [(len(broken.splitlines()) - 1, 4)]
    assert "trailing comma before ']'" in errors[0].message


def test_fields_are_checked_and_errors_name_the_swebench_field() -> None:
    bad = [
        {"instance_id": "django__django-11099", "model_patch": "--- a\n+++ b\n"},
        {"model_name_or_path": "m", "model_patch": "x"},
        {"instance_id": "django__django-11099", "model_name_or_path": "m", "model_patch": 7},
        ["not", "an", "object"],
    ]
    data = "".join(json.dumps(item) + "\n" for item in bad)
    data += '{"instance_id": "a", "model_name_or_path": "m", "model_name_or_path": "n"}\n'
    errors = errors_of(predictions=("p.jsonl",), given={"p.jsonl": data.encode()})
    assert [(e.line, e.field) for e in errors] == [
        (1, "model_name_or_path"),
        (2, "instance_id"),
        (3, "model_patch"),
        (4, None),
        (5, "model_name_or_path"),
    ]
    assert "given twice" in errors[4].message


def test_the_same_model_predicting_an_instance_twice_is_refused() -> None:
    line = (FIXTURES / "preds_gpt4.jsonl").read_bytes().splitlines(keepends=True)[0]
    errors = errors_of(predictions=("p.jsonl",), given={"p.jsonl": line + b"\n" + line})
    assert [(e.file, e.line) for e in errors] == [("p.jsonl", 3)]
    assert errors[0].message.endswith("first given on p.jsonl line 1")


def test_not_utf8_is_refused_with_line_and_column() -> None:
    data = (FIXTURES / "preds_gpt4.jsonl").read_bytes().replace(b"gpt-4-0613", b"gpt\xff4", 2)
    errors = errors_of(predictions=("p.jsonl",), given={"p.jsonl": data})
    assert errors[0].line == 1
    assert errors[0].message == "not valid UTF-8"
    assert errors[0].column is not None


def test_metadata_over_the_limit_leaves_out_the_bulkiest_fields() -> None:
    instances = fixture_lines("instances.jsonl")
    instances[0]["PASS_TO_PASS"] = json.dumps([f"test_{n}" * 4 for n in range(8000)])
    data = "".join(json.dumps(item) + "\n" for item in instances).encode()
    summary = run_import(given={"instances.jsonl": data})
    bug = Bug.objects.get(key="astropy__astropy-12907")
    assert "PASS_TO_PASS" not in bug.metadata
    assert bug.metadata["left_out"] == ["PASS_TO_PASS"]
    assert bug.metadata["test_patch"] == instances[0]["test_patch"]
    assert any("1 instance had metadata over" in note for note in summary.notes)


def test_titles_are_the_first_line_of_the_problem_statement() -> None:
    assert problem_title("\n\n  Crash on empty input  \nmore") == "Crash on empty input"
    assert len(problem_title("x" * 900)) == 500
    assert problem_title(None) == ""


def test_patch_keys_are_deterministic_and_safe() -> None:
    assert patch_key("a__b-1", "gpt-4") == "a__b-1@gpt-4"
    assert patch_key("a__b-1", "org/model") == patch_key("a__b-1", "org/model")
    assert patch_key("a__b-1", "org/model") != patch_key("a__b-1", "org-model")
    assert "/" not in patch_key("a__b-1", "/home/me/ckpt/SWE-Llama-13b")


def test_every_instance_of_the_fixture_is_imported() -> None:
    run_import()
    assert sorted(Bug.objects.values_list("key", flat=True)) == INSTANCE_IDS
    assert as_text([]) == []
