"""Issue 16 items 4–6 in the importer: size limits per field, names given twice in one
object, and a file read line by line and written in batches, still all or nothing."""

import io
import json
from typing import Any

import pytest

from judging.models import Annotation, AnnotationRevision
from rubrics.bundle import services
from rubrics.bundle.base import BundleImportError
from rubrics.bundle.read import (
    DUPLICATE_NAME,
    MAX_DESCRIPTION,
    MAX_DIFF,
    MAX_METADATA,
    MAX_NOTE,
    METADATA_TOO_LONG,
    TOO_LONG_VALUE,
    BundleError,
)
from rubrics.bundle.rubrics import MAX_REVISIONS, TOO_MANY_REVISIONS
from rubrics.bundle.services import bundle_import
from rubrics.models import Bug, BundleImport, Dataset, Patch
from tests.rubrics.bundles import bug, edit, jsonl, label, patch, revision, rubric, source

pytestmark = pytest.mark.django_db


def import_errors(*records: dict[str, Any] | str) -> list[BundleError]:
    with pytest.raises(BundleImportError) as excinfo:
        bundle_import(source=source(*records), dataset_name="Limits", actor=None)
    return excinfo.value.errors


def long_diff(characters: int) -> str:
    """A valid diff of exactly ``characters`` characters (one long added line)."""
    head = "--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,1 @@\n+"
    return head + "x" * (characters - len(head) - 1) + "\n"


def nothing_written() -> bool:
    return not (Dataset.objects.exists() or Bug.objects.exists() or Annotation.objects.exists())


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        (
            bug("B-2", description="d" * (MAX_DESCRIPTION + 1)),
            "description",
            TOO_LONG_VALUE.format(limit=MAX_DESCRIPTION),
        ),
        (
            bug("B-2", reference_patch=long_diff(MAX_DIFF + 1)),
            "reference_patch",
            TOO_LONG_VALUE.format(limit=MAX_DIFF),
        ),
        (patch("P-2", diff=long_diff(MAX_DIFF + 1)), "diff", TOO_LONG_VALUE.format(limit=MAX_DIFF)),
        (
            patch("P-2", metadata={"log": "x" * MAX_METADATA}),
            "metadata",
            METADATA_TOO_LONG.format(limit=MAX_METADATA),
        ),
        (
            bug("B-2", metadata={"log": "x" * MAX_METADATA}),
            "metadata",
            METADATA_TOO_LONG.format(limit=MAX_METADATA),
        ),
        (label(note="n" * (MAX_NOTE + 1)), "note", TOO_LONG_VALUE.format(limit=MAX_NOTE)),
        (
            rubric(revisions=[revision(), edit(justification="j" * (MAX_NOTE + 1))]),
            "revisions[1].justification",
            TOO_LONG_VALUE.format(limit=MAX_NOTE),
        ),
        (
            rubric(revisions=[revision()] * (MAX_REVISIONS + 1)),
            "revisions",
            TOO_MANY_REVISIONS.format(limit=MAX_REVISIONS),
        ),
    ],
    ids=[
        "description",
        "reference_patch",
        "diff",
        "patch-metadata",
        "bug-metadata",
        "note",
        "justification",
        "revisions",
    ],
)
def test_a_field_over_its_limit_is_refused_with_line_and_field(
    record: dict[str, Any], field: str, message: str
) -> None:
    errors = import_errors(bug(), patch(), record)
    assert [(e.line, e.field, e.message) for e in errors] == [(3, field, message)]
    assert "longer than" in message or "more than" in message
    assert nothing_written()


def test_fields_at_their_limits_are_imported() -> None:
    summary = bundle_import(
        source=source(
            bug(description="d" * MAX_DESCRIPTION, metadata={"log": "x" * (MAX_METADATA - 20)}),
            patch(diff=long_diff(MAX_DIFF)),
            label(note="n" * MAX_NOTE),
        ),
        dataset_name="Limits",
        actor=None,
    )
    assert (summary.counts["bug"].created, summary.counts["label"].created) == (1, 1)
    assert len(Patch.objects.get().diff) == MAX_DIFF


@pytest.mark.parametrize(
    ("line", "field", "name"),
    [
        ('{"kind": "bug", "key": "B1", "key": "B2", "description": "d", "reference_patch": "x"}',
         "key", "key"),
        ('{"kind": "label", "patch": "P-1", "annotator": "r", "label": "VALID", "label": "UNSURE"}',
         "label", "label"),
        ('{"kind": "patch", "key": "P9", "bug": "BUG-1", "diff": "x", '
         '"metadata": {"a": 1, "a": 1}}',
         "metadata.a", "a"),
        ('{"kind": "rubric", "bug": "BUG-1", "revisions": '
         '[{"text": "t", "author": "a", "author": "b"}]}',
         "revisions[0].author", "author"),
    ],
    ids=["key", "label", "metadata", "revision"],
)  # fmt: skip
def test_a_name_given_twice_in_one_object_is_refused_with_line_and_field(
    line: str, field: str, name: str
) -> None:
    errors = import_errors(bug(), patch(), line)
    assert [(e.line, e.field, e.message) for e in errors] == [
        (3, field, DUPLICATE_NAME.format(name=name))
    ]
    assert nothing_written()


def test_errors_past_the_cap_are_counted_and_the_first_by_line_are_kept(settings: Any) -> None:
    settings.SEJURY_BUNDLE_MAX_ERRORS = 3
    lines = [bug(), patch(), *["{broken"] * 10, label("NOPE")]
    with pytest.raises(BundleImportError) as excinfo:
        bundle_import(source=source(*lines), dataset_name="Limits", actor=None)
    assert [e.line for e in excinfo.value.errors] == [3, 4, 5]
    assert excinfo.value.more == 8  # 7 more broken lines and the unknown patch


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "BATCH_RECORDS", 3)


def many_labels(count: int) -> list[dict[str, Any]]:
    return [label(f"P-{n % 4}", f"rater-{n // 4:02d}", "VALID") for n in range(count)]


def test_batches_write_the_same_as_one_write(small_batches: None) -> None:
    records = [bug(), *[patch(f"P-{n}") for n in range(4)], *many_labels(20)]
    summary = bundle_import(source=source(*records), dataset_name="Limits", actor=None)
    assert summary.counts["label"].created == 20
    assert summary.counts["patch"].created == 4
    assert Annotation.objects.count() == AnnotationRevision.objects.count() == 20
    again = bundle_import(source=source(*records), dataset_name="Limits", actor=None)
    assert again.unchanged
    assert again.counts["label"].unchanged == 20
    assert AnnotationRevision.objects.count() == 20
    assert BundleImport.objects.count() == 2


def test_an_error_found_after_batches_were_written_leaves_nothing_written(
    small_batches: None,
) -> None:
    # Bugs, patches and most labels are checked and written before the last label's patch
    # turns out to be unknown: the transaction takes every batch back.
    records = [bug(), *[patch(f"P-{n}") for n in range(4)], *many_labels(20), label("NOPE")]
    errors = import_errors(*records)
    assert [(e.line, e.field) for e in errors] == [(26, "patch")]
    assert nothing_written()
    assert not Patch.objects.exists()


def test_a_duplicate_record_is_found_across_the_whole_file(small_batches: None) -> None:
    records = [bug(), patch(), label(), *[bug(f"B-{n}") for n in range(9)], label()]
    errors = import_errors(*records)
    assert [(e.line, e.field) for e in errors] == [(13, "annotator")]
    assert "first given on line 3" in errors[0].message


def test_a_source_that_cannot_seek_is_read_from_a_copy() -> None:
    class OneWay(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            chunk = self.data.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    data = jsonl(bug(), patch(), label())
    summary = bundle_import(source=OneWay(data), dataset_name="Limits", actor=None)  # type: ignore[arg-type]
    assert summary.counts["label"].created == 1
    assert BundleImport.objects.get().size == len(data)


def test_the_import_reports_its_progress() -> None:
    heard: list[tuple[str, float]] = []
    bundle_import(
        source=source(bug(), patch(), label()),
        dataset_name="Limits",
        actor=None,
        progress=lambda phase, fraction: heard.append((phase, fraction)),
    )
    assert heard[-1] == ("done", 1.0)
    assert json.dumps(heard)  # plain values, for a progress file
