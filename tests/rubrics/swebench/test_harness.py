"""The harness's own files, as ``swebench`` 5.0.2 writes them (``fixtures/harness``, made by
its ``make_fixtures.py`` with ``get_eval_report`` and ``make_run_report``), and the hub's
Parquet instances (``fixtures/make_parquet.py``)."""

import io
import json
import random
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.template.loader import render_to_string
from django.test import override_settings

from rubrics.models import Bug, Patch
from rubrics.swebench.logs import NO_REPORTS, NOT_A_ZIP, TOO_LARGE, zip_reports
from rubrics.swebench.parquet import NOT_PARQUET
from rubrics.swebench.read import SourceErrors
from rubrics.swebench.services import NamedFile, SwebenchImportError, swebench_import
from rubrics.templatetags import evidence
from tests.rubrics.swebench.helpers import FIXTURES, named

pytestmark = pytest.mark.django_db

HARNESS = FIXTURES / "harness"
LOGS = HARNESS / "logs" / "run_evaluation" / "run-1"
GPT4_RUN = "gpt-4-0613.run-1.json"
CLAUDE_RUN = "anthropic__claude-3-opus.run-1.json"
CLAUDE = "anthropic/claude-3-opus"
VALIDATORS = "auth_tests.test_validators"


def logs_zip(folder: Path = LOGS, *, name: str = "logs.zip") -> NamedFile:
    """The harness's logs folder zipped as a user would (``zip -r logs.zip logs/``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(HARNESS).as_posix())
    buffer.seek(0)
    return NamedFile(name, buffer)


def harness(name: str) -> NamedFile:
    return NamedFile(name, io.BytesIO((HARNESS / name).read_bytes()))


def run(
    *, predictions: tuple[str, ...], results: list[NamedFile], instances: str = "instances.jsonl"
) -> list[str]:
    summary = swebench_import(
        instances=named(instances),
        predictions=[named(name) for name in predictions],
        results=results,
        dataset_name="SWE-bench Lite",
        actor=None,
    )
    return summary.notes


def outcomes(source: str = "gpt-4-0613") -> dict[str, tuple[bool | None, str]]:
    rows = Patch.objects.filter(source=source).values_list("bug__key", "tests_pass", "tests_note")
    return {key: (passes, note) for key, passes, note in rows}


def test_an_infra_failure_in_the_run_report_is_not_evaluated_with_its_reason() -> None:
    notes = run(predictions=("preds_gpt4.jsonl",), results=[harness(GPT4_RUN)])
    found = outcomes()
    assert found["astropy__astropy-12907"] == (True, "")
    assert found["django__django-11099"] == (False, "")
    # The harness lists it under unresolved_ids too: its tests say nothing of the patch.
    assert found["psf__requests-2317"] == (
        None,
        f"not evaluated: infra_failure_ids of {GPT4_RUN} (out_of_memory)",
    )
    assert (
        f"{GPT4_RUN} (run report) of gpt-4-0613: tests pass for 1, fail for 1, "
        "not evaluated for 1 (infra_failure_ids 1), not in the report for 0"
    ) in notes


def test_incomplete_ids_are_not_evaluated_and_error_ids_fail_with_why() -> None:
    notes = run(predictions=("preds_claude.json",), results=[harness(CLAUDE_RUN)])
    found = outcomes(CLAUDE)
    assert found["django__django-11099"] == (True, "")
    assert found["django__django-11133"] == (
        None,
        f"not evaluated: incomplete_ids of {CLAUDE_RUN}",
    )
    passes, note = found["astropy__astropy-12907"]
    assert passes is False
    assert note.startswith(f"error_ids of {CLAUDE_RUN}: the harness's evaluation failed")
    assert (
        f"{CLAUDE_RUN} (run report) of {CLAUDE}: tests pass for 1, fail for 1 (error_ids 1), "
        "not evaluated for 1 (incomplete_ids 1), not in the report for 0"
    ) in notes


def test_a_zip_of_the_logs_gives_each_model_its_reports_and_the_tests_status() -> None:
    notes = run(predictions=("preds_gpt4.jsonl", "preds_claude.json"), results=[logs_zip()])
    gpt4, claude = outcomes(), outcomes(CLAUDE)
    assert gpt4["astropy__astropy-12907"] == (True, "")
    assert gpt4["django__django-11099"] == (False, "")
    passes, note = gpt4["psf__requests-2317"]
    assert passes is None
    assert note == (
        "not evaluated: infra_failure of logs.zip/logs/run_evaluation/run-1/gpt-4-0613/"
        "psf__requests-2317/report.json (out_of_memory)"
    )
    assert claude["django__django-11099"] == (True, "")
    # No report.json (the patch did not apply): the folder alone cannot say why.
    assert claude["astropy__astropy-12907"][0] is None
    patch = Patch.objects.get(source="gpt-4-0613", bug__key="django__django-11099")
    assert patch.tests_status == {
        "FAIL_TO_PASS": {
            "success": [f"test_unicode_validator ({VALIDATORS}.UsernameValidatorsTests)"],
            "failure": [f"test_ascii_validator ({VALIDATORS}.UsernameValidatorsTests)"],
        },
        "PASS_TO_PASS": {
            "success": [f"test_help_text ({VALIDATORS}.MinimumLengthValidatorTest)"],
            "failure": [],
        },
    }
    folder = "logs.zip/logs/run_evaluation/run-1/gpt-4-0613/"
    assert any(note.startswith(f"{folder} (per-instance report) of gpt-4-0613") for note in notes)


def test_the_run_report_and_its_logs_are_one_report() -> None:
    run(predictions=("preds_gpt4.jsonl",), results=[harness(GPT4_RUN), logs_zip()])
    found = outcomes()
    assert found["psf__requests-2317"][0] is None
    assert "infra_failure_ids" in found["psf__requests-2317"][1]
    passing = Patch.objects.get(source="gpt-4-0613", bug__key="astropy__astropy-12907")
    assert passing.tests_pass is True
    assert passing.tests_status is not None
    assert passing.tests_status["FAIL_TO_PASS"]["failure"] == []
    assert len(passing.tests_status["FAIL_TO_PASS"]["success"]) == 2


def test_a_run_report_that_disagrees_with_its_logs_is_refused() -> None:
    report = json.loads((HARNESS / GPT4_RUN).read_text())
    report["resolved_ids"] = ["django__django-11099"]
    report["unresolved_ids"] = ["astropy__astropy-12907", "psf__requests-2317"]
    given = NamedFile(GPT4_RUN, io.BytesIO(json.dumps(report).encode()))
    with pytest.raises(SwebenchImportError) as caught:
        run(predictions=("preds_gpt4.jsonl",), results=[given, logs_zip()])
    messages = [error.message for error in caught.value.errors]
    assert any("says instance 'astropy__astropy-12907' not resolved" in m for m in messages)
    assert not Patch.objects.exists()


def test_the_logs_of_a_model_with_no_predictions_here_are_noted_not_read() -> None:
    notes = run(predictions=("preds_gpt4.jsonl",), results=[logs_zip()])
    assert outcomes()["astropy__astropy-12907"] == (True, "")
    assert (
        "logs.zip/logs/run_evaluation/run-1/anthropic__claude-3-opus/: per-instance reports of "
        "anthropic__claude-3-opus, which no prediction here is of, were not read"
    ) in notes


def test_loose_report_json_files_are_one_report_of_the_one_model() -> None:
    reports = [
        NamedFile("report.json", io.BytesIO(path.read_bytes()))
        for path in sorted((LOGS / "gpt-4-0613").rglob("report.json"))
    ]
    notes = run(predictions=("preds_gpt4.jsonl",), results=reports)
    assert outcomes()["astropy__astropy-12907"] == (True, "")
    assert outcomes()["psf__requests-2317"][0] is None
    assert any(note.startswith("3 report.json files (per-instance report)") for note in notes)


def test_a_zip_without_reports_or_not_a_zip_is_refused() -> None:
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("logs/run_evaluation/run-1/m/i/run_instance.log", "")
    with pytest.raises(SwebenchImportError) as caught:
        run(
            predictions=("preds_gpt4.jsonl",),
            results=[
                NamedFile("empty.zip", io.BytesIO(empty.getvalue())),
                NamedFile("broken.zip", io.BytesIO(b"PK\x03\x04" + b"\0" * 40)),
            ],
        )
    errors = {error.file: error.message for error in caught.value.errors}
    assert errors["empty.zip"] == NO_REPORTS.format(what="zip")
    assert errors["broken.zip"].startswith(NOT_A_ZIP.split("{")[0])


@override_settings(SEJURY_BUNDLE_MAX_BYTES=3000)
def test_a_zip_is_read_up_to_the_size_limit_whatever_it_says_of_itself() -> None:
    with pytest.raises(SwebenchImportError) as caught:
        run(predictions=("preds_gpt4.jsonl",), results=[logs_zip()])
    assert [e.message for e in caught.value.errors if e.file == "logs.zip"] == [
        TOO_LARGE.format(limit=3000)
    ]


def test_hub_parquet_instances_import_as_their_json_lines_do() -> None:
    run(predictions=(), results=[], instances="instances.jsonl")
    from_json = {b.key: (b.title, b.description, b.metadata) for b in Bug.objects.all()}
    Bug.objects.all().delete()
    parquet = "instances.parquet"
    run(predictions=("preds_gpt4.jsonl",), results=[harness(GPT4_RUN)], instances=parquet)
    from_parquet = {b.key: (b.title, b.description, b.metadata) for b in Bug.objects.all()}
    assert from_parquet == from_json
    assert outcomes()["psf__requests-2317"][0] is None


def test_the_bm25_retrieval_text_is_left_out_and_said() -> None:
    notes = run(predictions=(), results=[], instances="instances_bm25.parquet")
    bug = Bug.objects.get(key="django__django-11099")
    assert "text" not in bug.metadata
    assert bug.metadata["left_out"] == ["text"]
    assert bug.metadata["FAIL_TO_PASS"].startswith('["test_ascii_validator')
    assert notes[0].startswith("4 instances had a 'text' field (the BM25 retrieval prompt")


def test_a_broken_parquet_file_is_refused_as_parquet_not_as_utf8() -> None:
    data = (FIXTURES / "instances.parquet").read_bytes()
    broken = data[:200] + data[-8:]
    with pytest.raises(SwebenchImportError) as caught:
        swebench_import(
            instances=NamedFile("test-00000-of-00001.parquet", io.BytesIO(broken)),
            predictions=[],
            results=[],
            dataset_name="d",
            actor=None,
        )
    (error,) = caught.value.errors
    assert error.message.startswith(NOT_PARQUET.split("{")[0])
    assert "UTF-8" not in str(error)


def test_an_error_in_a_parquet_instance_names_its_row() -> None:
    rows = [{"instance_id": "a__b-1", "problem_statement": "x", "patch": "not a diff"}]
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    buffer.seek(0)
    with pytest.raises(SwebenchImportError) as caught:
        swebench_import(
            instances=NamedFile("i.parquet", buffer),
            predictions=[],
            results=[],
            dataset_name="d",
            actor=None,
        )
    (error,) = caught.value.errors
    assert str(error).startswith("i.parquet, row 1, field 'patch': ")


def test_a_tests_status_over_the_limit_keeps_its_failures_and_counts_the_rest() -> None:
    report = json.loads((LOGS / "gpt-4-0613/django__django-11099/report.json").read_text())
    status = report["django__django-11099"]["tests_status"]
    many = [f"test_case_{n:06d} (big_tests.tests.Case)" for n in range(3000)]
    status["PASS_TO_PASS"]["success"] = many
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        path = "logs/run_evaluation/run-1/gpt-4-0613/django__django-11099/report.json"
        archive.writestr(path, json.dumps(report))
    run(predictions=("preds_gpt4.jsonl",), results=[NamedFile("logs.zip", buffer)])
    kept = Patch.objects.get(source="gpt-4-0613", bug__key="django__django-11099").tests_status
    assert kept is not None
    assert kept["left_out"] == {"PASS_TO_PASS.success": 3000}
    assert kept["PASS_TO_PASS"]["success"] == []
    assert kept["FAIL_TO_PASS"]["failure"] == [
        f"test_ascii_validator ({VALIDATORS}.UsernameValidatorsTests)"
    ]


def test_the_evidence_block_says_a_list_left_out_by_its_length() -> None:
    status = {
        "FAIL_TO_PASS": {"success": [], "failure": ["test_b"]},
        "PASS_TO_PASS": {"success": [], "failure": []},
        "left_out": {"PASS_TO_PASS.success": 3000},
    }
    f2p, p2p = evidence.evidence_lists(status)
    assert (f2p.name, f2p.passed, f2p.failed, f2p.failing) == ("FAIL_TO_PASS", 0, 1, ["test_b"])
    assert (p2p.name, p2p.passed, p2p.failed, p2p.names_left_out) == ("PASS_TO_PASS", 3000, 0, True)
    context = evidence.test_evidence(Patch(tests_status=status))
    html = render_to_string("components/_test_evidence.html", context)
    assert "3000 passing (names not kept: the list was too long)" in html


def test_a_zip_of_one_model_s_folder_is_of_the_one_model_not_of_the_zip() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted((LOGS / "gpt-4-0613").rglob("report.json")):
            archive.write(path, path.relative_to(LOGS / "gpt-4-0613").as_posix())
    notes = run(predictions=("preds_gpt4.jsonl",), results=[NamedFile("gpt4.zip", buffer)])
    assert outcomes()["django__django-11099"] == (False, "")
    assert any(note.startswith("3 report.json files (per-instance report) of") for note in notes)


def test_a_damaged_zip_is_refused_as_a_zip_whatever_the_damage() -> None:
    data = logs_zip().stream.read()
    rng = random.Random(27)  # noqa: S311 (damage, not secrets)
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(4, len(damaged))] = rng.randrange(256)
        errors = SourceErrors(5)
        zip_reports(io.BytesIO(bytes(damaged)), "z.zip", errors)  # raises nothing


@override_settings(SEJURY_BUNDLE_MAX_BYTES=15_000)
def test_parquet_is_refused_by_its_uncompressed_size_before_a_row_is_read() -> None:
    # instances_bm25.parquet: 22.6 KB of columns uncompressed, 9.2 KB of them the retrieval
    # text, which is not read; a column of 20 MB of one letter compresses to a few KB.
    run(predictions=(), results=[], instances="instances_bm25.parquet")
    assert Bug.objects.count() == 4
    rows = [{"instance_id": "a__b-1", "problem_statement": "x" * 20_000_000, "patch": "p"}]
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer, compression="zstd")
    assert buffer.tell() < 100_000
    buffer.seek(0)
    with pytest.raises(SwebenchImportError) as caught:
        swebench_import(
            instances=NamedFile("bomb.parquet", buffer),
            predictions=[],
            results=[],
            dataset_name="d",
            actor=None,
        )
    (error,) = caught.value.errors
    assert error.message.startswith("its columns hold 20,0")
    assert "over the import's size limit of 15,000 bytes" in error.message
