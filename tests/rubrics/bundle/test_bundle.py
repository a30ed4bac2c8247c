import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from judging.annotations.bundle import BAD_ANNOTATOR, UNKNOWN_LABEL
from judging.models import Annotation
from rubrics.bundle.base import (
    FILE_TOO_LARGE,
    INVALID_REFERENCE,
    UNKNOWN_REFERENCE,
    BundleImportError,
    ImportSummary,
    import_counts_text,
)
from rubrics.bundle.read import EMPTY_VALUE, MISSING_FIELD, NOT_UTF8, BundleError
from rubrics.bundle.rubrics import NO_REVISIONS
from rubrics.bundle.services import (
    DATASET_NAME_TOO_LONG,
    DATASET_SLUG_TAKEN,
    INVALID_DATASET_NAME,
    bundle_export,
    bundle_import,
)
from rubrics.models import Bug, BundleImport, Dataset, Patch
from sejury_web.diffs import NOT_A_DIFF
from sejury_web.json_reader import MAX_DEPTH, TOO_DEEP
from sejury_web.roles import Role
from tests.rubrics.bundles import bug, jsonl, label, patch, revision, rubric, source

pytestmark = pytest.mark.django_db

GOOD = (bug("BUG-1"), bug("BUG-2"), patch("P-1", "BUG-1"), patch("P-2", "BUG-2"), label("P-1"))


def import_records(*records: dict | str, dataset: str = "Demo") -> ImportSummary:
    return bundle_import(source=source(*records), dataset_name=dataset, actor=None)


def import_errors(*records: dict | str, dataset: str = "Demo") -> list[BundleError]:
    with pytest.raises(BundleImportError) as excinfo:
        import_records(*records, dataset=dataset)
    return excinfo.value.errors


def table_counts() -> tuple[int, int, int, int]:
    return (
        Dataset.objects.count(),
        Bug.objects.count(),
        Patch.objects.count(),
        Annotation.objects.count(),
    )


def test_import_creates_dataset_bugs_patches_labels_and_annotator_users() -> None:
    summary = import_records(*GOOD)
    assert summary.dataset_created
    assert summary.dataset.slug == "demo"
    assert {k: (c.created, c.updated, c.unchanged) for k, c in summary.counts.items()} == {
        "bug": (2, 0, 0), "patch": (2, 0, 0), "label": (1, 0, 0), "rubric": (0, 0, 0),
    }  # fmt: skip
    p = Patch.objects.get(key="P-1")
    assert p.bug.key == "BUG-1"
    assert p.dataset == summary.dataset
    assert len(p.diff_hash) == 64
    rater = User.objects.get(username="rater-01")
    assert not rater.has_usable_password()
    assert list(rater.groups.values_list("name", flat=True)) == [Role.ANNOTATOR]
    annotation = Annotation.objects.get()
    assert (annotation.label, annotation.origin) == ("VALID", Annotation.Origin.IMPORTED)
    assert BundleImport.objects.get().summary["bug"] == {"created": 2, "updated": 0, "unchanged": 0}


def test_tests_pass_falls_back_to_the_metadata() -> None:
    no_field = {k: v for k, v in patch("P-1").items() if k != "tests_pass"}
    import_records(
        bug(),
        no_field | {"metadata": {"tests_pass": False}},
        no_field | {"key": "P-2", "metadata": {"tests_pass": "yes"}},
        patch("P-3", tests_pass=None, metadata={"tests_pass": True}),
    )
    assert dict(Patch.objects.values_list("key", "tests_pass")) == {
        "P-1": False, "P-2": None, "P-3": None,
    }  # fmt: skip


def test_text_is_stored_exactly_as_given() -> None:
    crlf = patch("P-1")["diff"].replace("\n", "\r\n")
    import_records(bug(), patch("P-1", diff=crlf))
    assert Patch.objects.get().diff == crlf


def test_reimporting_the_same_bundle_changes_nothing() -> None:
    import_records(*GOOD)
    before = list(Patch.objects.values_list("pk", "updated_at"))
    summary = import_records(*GOOD)
    assert summary.unchanged
    assert not summary.dataset_created
    assert all(c.created == c.updated == 0 for c in summary.counts.values())
    assert table_counts() == (1, 2, 2, 1)
    assert list(Patch.objects.values_list("pk", "updated_at")) == before


def test_reimport_with_changed_records_updates_them() -> None:
    import_records(*GOOD)
    summary = import_records(
        bug("BUG-1", title="new title"),
        patch("P-1", "BUG-1", tests_pass=None),
        label("P-1", value="INVALID", note="wrong"),
    )
    assert {k: (c.created, c.updated) for k, c in summary.counts.items()} == {
        "bug": (0, 1), "patch": (0, 1), "label": (0, 1), "rubric": (0, 0),
    }  # fmt: skip
    p = Patch.objects.get(key="P-1")
    assert (p.bug.key, p.tests_pass) == ("BUG-1", None)
    assert Annotation.objects.get().note == "wrong"


def test_reimport_cannot_move_a_patch_to_another_bug() -> None:
    import_records(*GOOD)
    errors = import_errors(patch("P-1", "BUG-2"))
    assert [(e.line, e.field) for e in errors] == [(1, "bug")]
    assert "belongs to bug 'BUG-1'" in errors[0].message
    assert Patch.objects.get(key="P-1").bug.key == "BUG-1"


def test_an_imported_label_that_overwrites_one_given_in_the_app_becomes_imported() -> None:
    import_records(*GOOD)
    Annotation.objects.update(origin=Annotation.Origin.UI)
    import_records(label("P-1"))  # same label: nothing changes, origin stays
    assert Annotation.objects.get().origin == Annotation.Origin.UI
    import_records(label("P-1", value="INVALID"))
    assert Annotation.objects.get().origin == Annotation.Origin.IMPORTED


def test_annotator_names_are_case_insensitive() -> None:
    errors = import_errors(*GOOD, label("P-1", annotator="RATER-01", value="INVALID"))
    assert [(e.line, e.field) for e in errors] == [(6, "annotator")]
    import_records(*GOOD)
    import_records(label("P-2", annotator="Rater-01"))
    assert User.objects.filter(username__iexact="rater-01").count() == 1
    assert Annotation.objects.filter(annotator__username="rater-01").count() == 2


def test_labels_never_give_the_annotator_role_to_an_existing_lead(lead: User) -> None:
    errors = import_errors(*GOOD, label("P-2", annotator="LEAD"))
    assert [(e.line, e.field) for e in errors] == [(6, "annotator")]
    assert "'lead' (named by this line) is a lead without the annotator role" in errors[0].message
    assert not lead.groups.filter(name=Role.ANNOTATOR).exists()


def test_records_may_name_bugs_and_patches_already_in_the_dataset() -> None:
    import_records(bug("BUG-1"))
    import_records(patch("P-1", "BUG-1"))
    import_records(label("P-1"))
    assert table_counts() == (1, 1, 1, 1)


def test_records_may_come_in_any_order() -> None:
    import_records(label("P-1"), patch("P-1", "BUG-1"), bug("BUG-1"))
    assert table_counts() == (1, 1, 1, 1)


def test_same_keys_in_two_datasets_are_distinct() -> None:
    import_records(*GOOD, dataset="One")
    import_records(*GOOD, dataset="Two")
    assert table_counts() == (2, 4, 4, 2)


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("{not json", None, "invalid JSON"),
        ("[1, 2]", None, "a record must be a JSON object, got an array"),
        (json.dumps({"key": "X"}), "kind", "missing field"),
        (json.dumps({"kind": "comment"}), "kind", "unknown kind 'comment'"),
        (
            json.dumps({"kind": "rubric", "bug": "BUG-1", "revisions": []}),
            "revisions",
            NO_REVISIONS,
        ),
        (
            json.dumps(bug("BUG-9", reference_patch=None)),
            "reference_patch",
            "expected a string, got null",
        ),
        (
            json.dumps({k: v for k, v in bug("BUG-9").items() if k != "description"}),
            "description",
            MISSING_FIELD,
        ),
        (json.dumps(bug("BUG-9", description="  ")), "description", EMPTY_VALUE),
        (json.dumps(bug("BUG-9", metadata=[1])), "metadata", "expected an object, got an array"),
        (json.dumps(bug("BUG-9", severity="high")), "severity", "unknown field for a bug record"),
        (json.dumps(bug("BUG/9")), "key", "must not contain '/'"),
        (json.dumps(bug("BUG-9", reference_patch="please fix it")), "reference_patch", NOT_A_DIFF),
        (
            json.dumps(patch("P-9", tests_pass="yes")),
            "tests_pass",
            "expected true or false or null, got a string",
        ),
        (
            json.dumps(patch("P-9", "NOPE")),
            "bug",
            UNKNOWN_REFERENCE.format(kind="bug", key="NOPE"),
        ),
        (
            json.dumps(patch("P-9", diff="diff --git a/x b/x\n@@ broken")),
            "diff",
            "not a unified diff",
        ),
        (json.dumps(label("NOPE")), "patch", UNKNOWN_REFERENCE.format(kind="patch", key="NOPE")),
        (
            json.dumps(label(value="MAYBE")),
            "label",
            UNKNOWN_LABEL.format(value="MAYBE", choices="VALID, INVALID, UNSURE"),
        ),
        (json.dumps(label(value="valid")), "label", "unknown label 'valid'"),
        (json.dumps(label(annotator="rater 1")), "annotator", BAD_ANNOTATOR),
        (json.dumps(label(annotator=7)), "annotator", "expected a string, got a number"),
        ('{"kind": "bug", "key": "X", "metadata": {"score": NaN}}', None, "NaN is not valid JSON"),
        (
            '{"kind": "bug", "key": "X", "metadata": {"score": 1e400}}',
            None,
            "the number 1e400 is too large",
        ),
        ("[" * 100_000 + "]" * 100_000, None, TOO_DEEP.format(limit=MAX_DEPTH) + " (column 101)"),
        (json.dumps(bug("BUG-9", description="a\u0000b")), "description", "a NUL character"),
        (json.dumps(bug("BUG-9", metadata={"k": ["\ud800"]})), "metadata", "an unpaired surrogate"),
        (
            json.dumps(patch("P-9", diff=patch()["diff"] + "+\ud800\n")),
            "diff",
            "an unpaired surrogate",
        ),
        (json.dumps(label(value="X" * 10_000)), "label", "XXX…'; expected one of"),
    ],
)
def test_each_invalid_line_is_reported_with_line_and_field_and_nothing_is_written(
    line: str, field: str | None, message: str
) -> None:
    errors = import_errors(bug("BUG-1"), patch("P-1"), line)
    assert any(e.line == 3 and e.field == field and message in e.message for e in errors), errors
    assert table_counts() == (0, 0, 0, 0)
    assert BundleImport.objects.count() == 0


def test_duplicate_keys_in_the_file_name_both_lines() -> None:
    errors = import_errors(
        bug("BUG-1"), bug("BUG-1"), patch("P-1"), patch("P-1"), label(), label(value="INVALID")
    )
    assert [(e.line, e.field) for e in errors] == [(2, "key"), (4, "key"), (6, "annotator")]
    assert "first given on line 1" in errors[0].message
    assert "first given on line 5" in errors[2].message


def test_a_reference_to_an_invalid_record_says_so_not_unknown() -> None:
    errors = import_errors(bug("BUG-1", severity="high"), patch("P-1", "BUG-1"), label("P-1"))
    assert [(e.line, e.field) for e in errors] == [(1, "severity"), (2, "bug")]
    assert errors[1].message == INVALID_REFERENCE.format(kind="bug", key="BUG-1", line=1)


def test_dataset_is_found_by_name_or_slug_and_slug_clashes_are_refused() -> None:
    import_records(*GOOD, dataset="Defects4J LE2019")
    assert import_records(*GOOD, dataset="defects4j-le2019").unchanged
    errors = import_errors(*GOOD, dataset="Defects4J  LE2019!")
    assert errors[0].message == DATASET_SLUG_TAKEN.format(
        name="Defects4J  LE2019!", slug="defects4j-le2019", other="Defects4J LE2019"
    )
    assert [e.message for e in import_errors(*GOOD, dataset="x" * 201)] == [DATASET_NAME_TOO_LONG]
    assert [e.message for e in import_errors(*GOOD, dataset="数据集")] == [INVALID_DATASET_NAME]
    assert Dataset.objects.count() == 1


def test_non_utf8_bytes_name_the_line() -> None:
    data = jsonl(bug("BUG-1")) + b'{"kind": "bug", "key": "caf\xe9"}\n'
    with pytest.raises(BundleImportError) as excinfo:
        bundle_import(source=io.BytesIO(data), dataset_name="Demo", actor=None)
    (error,) = excinfo.value.errors
    assert (error.line, error.message) == (2, NOT_UTF8.format(byte=28))
    assert table_counts() == (0, 0, 0, 0)


def test_every_error_of_a_file_is_reported_not_only_the_first() -> None:
    errors = import_errors(bug("BUG-1"), "{oops", patch("P-1", "NOPE"), label("P-1", value="?"))
    assert [e.line for e in errors] == [2, 3, 4]


@override_settings(SEJURY_BUNDLE_MAX_ERRORS=3)
def test_errors_are_capped_and_the_rest_counted() -> None:
    with pytest.raises(BundleImportError) as excinfo:
        import_records(*["{bad"] * 10)
    assert len(excinfo.value.errors) == 3
    assert excinfo.value.more == 7
    assert "7 more errors not shown" in str(excinfo.value)


@override_settings(SEJURY_BUNDLE_MAX_BYTES=100)
def test_a_file_over_the_size_limit_is_refused_before_parsing() -> None:
    errors = import_errors(*GOOD)
    assert [e.message for e in errors] == [FILE_TOO_LARGE.format(limit=100)]
    assert table_counts() == (0, 0, 0, 0)


def test_an_empty_file_is_an_error() -> None:
    with pytest.raises(BundleImportError, match="no records"):
        bundle_import(source=io.BytesIO(b"\n\n"), dataset_name="Demo", actor=None)


def test_a_failure_while_writing_rolls_everything_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """All or nothing holds even past validation: a write error leaves no half import."""
    from judging.annotations import bundle as bundle_kinds

    def explode(**_: object) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr(bundle_kinds, "annotators_ensure", explode)
    with pytest.raises(RuntimeError):
        import_records(*GOOD)
    assert table_counts() == (0, 0, 0, 0)


def test_duplicate_patches_of_a_bug_are_recognized_and_noted() -> None:
    summary = import_records(
        bug(), patch("P-1"), patch("P-2", diff=patch()["diff"].replace("\n", "\r\n"))
    )
    first, second = Patch.objects.order_by("key")
    assert first.diff_hash == second.diff_hash
    assert any("P-2 = P-1" in note for note in summary.notes)


def test_export_then_import_round_trips() -> None:
    import_records(
        bug("BUG-1", metadata={"nested": {"ü": [1, 2.5, None]}}),
        patch("P-1", diff=patch()["diff"].replace("\n", "\r\n"), tests_pass=None),
        label("P-1", note="looks right ✓"),
        label("P-1", annotator="rater-02", value="UNSURE", ratings={"security": 2, "a-b_c": 0}),
        rubric("BUG-1", confirmed_by="reviewer-b"),
        rubric("BUG-1", variant="free_form", revisions=[revision("Sum ✓ every item.\r\n")]),
    )
    first = "".join(bundle_export(dataset=Dataset.objects.get()))
    assert first.count('"kind": "rubric"') == 2
    # A label's ratings, by name whatever order the database keeps them in.
    assert first.count('"ratings": {"a-b_c": 0, "security": 2}') == 1
    summary = bundle_import(source=io.BytesIO(first.encode()), dataset_name="Copy", actor=None)
    second = "".join(bundle_export(dataset=summary.dataset))
    assert first == second
    again = bundle_import(source=io.BytesIO(first.encode()), dataset_name="Demo", actor=None)
    assert again.unchanged


def test_a_label_s_ratings_come_in_checked_and_stay_when_a_record_has_none() -> None:
    import_records(bug(), patch("P-1"), label("P-1", ratings={"security": 3}))
    annotation = Annotation.objects.get()
    assert annotation.ratings == {"security": 3}
    assert [r.ratings for r in annotation.revisions.all()] == [{"security": 3}]
    import_records(bug(), patch("P-1"), label("P-1", value="INVALID"))  # no ratings: kept
    annotation.refresh_from_db()
    assert (annotation.label, annotation.ratings) == ("INVALID", {"security": 3})
    for ratings, message in [
        ({"Security": 3}, "'Security' is not a dimension name"),
        ({"security": 10}, "the rating of security must be a whole number from 0 to 9"),
        ({"security": True}, "the rating of security must be a whole number"),
        ({"security": "3"}, "the rating of security must be a whole number"),
        ({f"d{n}": 1 for n in range(9)}, "at most 8 ratings"),
    ]:
        [error] = import_errors(bug(), patch("P-1"), label("P-1", ratings=ratings))
        assert (error.line, error.field) == (3, "ratings")
        assert error.message.startswith(message)
    annotation.refresh_from_db()
    assert annotation.ratings == {"security": 3}


def test_le2019_bundle_imports_with_the_published_counts(
    le2019_bundle: Path, tmp_path: Path
) -> None:
    with le2019_bundle.open("rb") as f:
        summary = bundle_import(source=f, dataset_name="defects4j-le2019", actor=None)
    dataset = summary.dataset
    assert dataset.bugs.count() == 100
    assert dataset.patches.count() == 150
    annotations = Annotation.objects.filter(patch__dataset=dataset)
    assert annotations.count() == 950
    assert annotations.values("annotator").distinct().count() == 37
    assert {row["label"]: row["n"] for row in _label_counts(annotations)} == {
        "VALID": 156, "INVALID": 671, "UNSURE": 123,
    }  # fmt: skip
    assert any("69 of 250 diffs" in note for note in summary.notes)
    assert set(dataset.patches.values_list("tests_pass", flat=True)) == {True}  # as DATA.md says
    # Round trip: what we export re-imports into the same dataset as a no-op.
    exported = "".join(bundle_export(dataset=dataset))
    assert len(exported.splitlines()) == 1200
    assert bundle_import(
        source=io.BytesIO(exported.encode()), dataset_name="defects4j-le2019", actor=None
    ).unchanged


def _label_counts(annotations):  # type: ignore[no-untyped-def]
    from django.db.models import Count

    return annotations.values("label").annotate(n=Count("pk"))


def test_crlf_terminators_a_bom_and_blank_lines_are_fine() -> None:
    data = b"\xef\xbb\xbf" + jsonl(*GOOD).replace(b"\n", b"\r\n\r\n")
    summary = bundle_import(source=io.BytesIO(data), dataset_name="Demo", actor=None)
    assert summary.counts["patch"].created == 2
    assert table_counts() == (1, 2, 2, 1)


def test_a_stored_summary_reads_in_import_order_whatever_order_its_keys_come_in() -> None:
    """PostgreSQL's jsonb gives a summary's keys back in its own order."""
    counts = {"created": 2, "updated": 0, "unchanged": 0}
    stored = BundleImport(summary={"label": counts, "notes": [], "patch": counts, "bug": counts})
    assert import_counts_text(stored) == "2 bugs, 2 patches, 2 labels created"
