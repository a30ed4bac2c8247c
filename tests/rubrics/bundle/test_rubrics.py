"""The bundle's ``rubric`` records: import, validation, re-import and export."""

import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from judging.models import Annotation
from rubrics.bundle import rubrics as br
from rubrics.bundle.base import (
    DUPLICATE_IN_FILE,
    INVALID_REFERENCE,
    UNKNOWN_REFERENCE,
    BundleImportError,
    ImportSummary,
)
from rubrics.bundle.read import EMPTY_VALUE, MISSING_FIELD, BundleError
from rubrics.bundle.services import bundle_export, bundle_import
from rubrics.models import Bug, Dataset, Patch, Rubric, RubricEvent, RubricRevision, Theme
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import rubric_confirm, rubric_revise, rubric_submit
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.rubrics.bundles import (
    DRAFT_TEXT,
    EDITED_TEXT,
    bug,
    edit,
    label,
    patch,
    revision,
    rubric,
    source,
)

pytestmark = pytest.mark.django_db

THEMES = ", ".join(Theme.values)


def import_records(*records: dict | str, user: User | None = None) -> ImportSummary:
    return bundle_import(source=source(*records), dataset_name="Demo", actor=user)


def import_errors(*records: dict | str) -> list[BundleError]:
    with pytest.raises(BundleImportError) as excinfo:
        import_records(*records)
    return excinfo.value.errors


def rubric_counts(summary: ImportSummary) -> tuple[int, int, int]:
    c = summary.counts["rubric"]
    return c.created, c.updated, c.unchanged


def history() -> list[tuple[int, str, str]]:
    return list(RubricRevision.objects.order_by("number").values_list("number", "text", "author"))


def events() -> list[tuple[str, str | None, str]]:
    return [
        (e.kind, e.actor.username if e.actor else None, e.comment)
        for e in RubricEvent.objects.select_related("actor").order_by("id")
    ]


def export_text() -> str:
    return "".join(bundle_export(dataset=Dataset.objects.get(name="Demo")))


def test_a_draft_an_edit_and_a_confirmation_make_a_golden_rubric(lead: User) -> None:
    reviewer = user_create(actor=None, username="reviewer-a", password=None, roles=[Role.REVIEWER])
    users_before = User.objects.count()
    summary = import_records(
        bug(),
        rubric(
            revisions=[revision(), edit(author="Reviewer-A", themes=["scope", "overfitting"])],
            confirmed_by="reviewer-b",
        ),
        user=lead,
    )

    assert rubric_counts(summary) == (1, 0, 0)
    imported = Rubric.objects.get()
    draft, edited = imported.revisions.order_by("number")
    assert (imported.variant, imported.status) == ("templated", Rubric.Status.GOLDEN)
    assert (imported.current_number, imported.golden_revision) == (1, edited)
    assert imported.submitted_by is None
    assert (draft.text, draft.author, draft.author_user) == (DRAFT_TEXT, "llm:gemini-2.5-pro", None)
    assert draft.structure["requirements"][1] == {
        "title": "Fix in total()",
        "detail": "the change is in ``calc.py``.",
    }
    assert (edited.text, edited.author, edited.author_user) == (EDITED_TEXT, "Reviewer-A", reviewer)
    assert edited.justification == "overfits the reference fix"
    assert edited.themes == ["overfitting", "scope"]  # as the editor saves them
    assert len(edited.structure["requirements"]) == 1
    assert events() == [
        ("imported", "lead", br.IMPORTED_REVISIONS.format(first=0, last=1)),
        ("confirmed", None, br.IMPORTED_CONFIRMATION.format(name="reviewer-b")),
    ]
    # Rubric authors and confirmers never become users, nor get a role.
    assert User.objects.count() == users_before
    assert list(reviewer.groups.values_list("name", flat=True)) == [Role.REVIEWER]
    assert summary.notes == []


def test_a_confirmer_who_is_a_user_is_the_confirmation_s_actor() -> None:
    confirmer = user_create(actor=None, username="reviewer-b", password=None, roles=[Role.REVIEWER])
    import_records(bug(), rubric(confirmed_by="REVIEWER-B"))
    event = RubricEvent.objects.get(kind=RubricEvent.Kind.CONFIRMED)
    assert event.actor == confirmer
    assert event.revision == Rubric.objects.get().golden_revision


def test_without_a_confirmer_the_rubric_is_in_review() -> None:
    import_records(bug(), rubric())
    imported = Rubric.objects.get()
    assert (imported.status, imported.golden_revision, imported.current_number) == (
        Rubric.Status.IN_REVIEW,
        None,
        1,
    )
    assert [kind for kind, _, _ in events()] == ["imported"]


def test_a_free_form_rubric_keeps_its_text_exactly_as_its_structure() -> None:
    text = "  Any fix must *sum every item*.\r\n\r\nNo test changes.  \r\n"
    import_records(bug(), rubric(variant="free_form", revisions=[revision(text)]))
    (row,) = RubricRevision.objects.all()
    assert row.text == text
    assert row.structure == {"text": text}
    assert Rubric.objects.get().variant == Rubric.Variant.FREE_FORM


def test_a_templated_text_off_the_template_is_kept_whole() -> None:
    text = "Root cause: off by one.\nAnything that sums every item is fine.\n"
    import_records(bug(), rubric(revisions=[revision(text)]))
    (row,) = RubricRevision.objects.all()
    assert (row.text, row.structure) == (text, {"text": text.strip()})


def test_both_variants_of_a_bug_may_come_in_one_file() -> None:
    summary = import_records(bug(), rubric(), rubric(variant="free_form"))
    assert rubric_counts(summary) == (2, 0, 0)
    assert set(Rubric.objects.values_list("variant", flat=True)) == {"templated", "free_form"}


def test_a_rubric_may_name_a_bug_already_in_the_dataset() -> None:
    import_records(bug())
    import_records(rubric())
    assert Rubric.objects.get().bug.key == "BUG-1"


def test_edits_without_justification_are_imported_and_counted_in_the_notes() -> None:
    summary = import_records(
        bug(),
        rubric(revisions=[revision(), edit(justification=""), edit("Shorter.\n")]),
        rubric(variant="free_form", revisions=[revision("A.\n"), edit("B.\n", justification=" ")]),
    )
    assert br.UNJUSTIFIED_NOTE.format(count=2, total=3) in summary.notes
    assert RubricRevision.objects.count() == 5


def test_a_confirmation_by_an_editor_is_imported_and_noted() -> None:
    summary = import_records(bug(), rubric(confirmed_by="REVIEWER-A"))
    assert Rubric.objects.get().status == Rubric.Status.GOLDEN
    assert br.SELF_CONFIRMED_NOTE.format(count=1, bugs="BUG-1") in summary.notes


LONG_TEXT = "x" * (br.MAX_TEXT + 1)


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        (
            {k: v for k, v in rubric().items() if k != "bug"},
            "bug",
            MISSING_FIELD,
        ),
        ({k: v for k, v in rubric().items() if k != "revisions"}, "revisions", MISSING_FIELD),
        (rubric(revisions=[]), "revisions", br.NO_REVISIONS),
        (rubric(revisions={"text": "x"}), "revisions", "expected an array, got an object"),
        (rubric(revisions=["x"]), "revisions[0]", "a revision must be a JSON object, got a string"),
        (rubric(revisions=[{"author": "llm:x"}]), "revisions[0].text", MISSING_FIELD),
        (rubric(revisions=[revision(), edit(" \n")]), "revisions[1].text", EMPTY_VALUE),
        (rubric(revisions=[revision(7)]), "revisions[0].text", "expected a string, got a number"),
        (rubric(revisions=[revision(LONG_TEXT)]), "revisions[0].text", "longer than 50,000"),
        (rubric(revisions=[{"text": "x"}]), "revisions[0].author", MISSING_FIELD),
        (rubric(revisions=[revision(author="")]), "revisions[0].author", EMPTY_VALUE),
        (
            rubric(revisions=[revision(), edit(justification=None)]),
            "revisions[1].justification",
            "expected a string, got null",
        ),
        (
            rubric(revisions=[revision(), edit(themes="overfitting")]),
            "revisions[1].themes",
            "expected an array, got a string",
        ),
        (
            rubric(revisions=[revision(), edit(themes=["overfitting", "style"])]),
            "revisions[1].themes",
            br.UNKNOWN_THEME.format(value="style", choices=THEMES),
        ),
        (
            rubric(revisions=[revision(), edit(themes=[1])]),
            "revisions[1].themes",
            br.THEME_NOT_A_STRING.format(type="a number"),
        ),
        (
            rubric(revisions=[revision(), edit(comment="hi")]),
            "revisions[1].comment",
            "unknown field for a revision (allowed: text, author, justification, themes)",
        ),
        (rubric(status="golden"), "status", "unknown field for a rubric record"),
        (
            rubric(variant="plain"),
            "variant",
            br.UNKNOWN_VARIANT.format(value="plain", choices="templated, free_form"),
        ),
        (rubric("NOPE"), "bug", UNKNOWN_REFERENCE.format(kind="bug", key="NOPE")),
        (rubric(confirmed_by=""), "confirmed_by", EMPTY_VALUE),
        (rubric(confirmed_by=["b"]), "confirmed_by", "expected a string, got an array"),
    ],
)
def test_each_invalid_rubric_is_reported_with_line_and_field_and_nothing_is_written(
    record: dict[str, Any], field: str, message: str
) -> None:
    errors = import_errors(bug(), patch(), label(), rubric(variant="free_form"), record)
    assert any(e.line == 5 and e.field == field and message in e.message for e in errors), errors
    assert (Dataset.objects.count(), Bug.objects.count(), Patch.objects.count()) == (0, 0, 0)
    assert (Annotation.objects.count(), Rubric.objects.count()) == (0, 0)
    assert not User.objects.filter(username="rater-01").exists()


def test_every_bad_revision_of_a_rubric_is_reported() -> None:
    errors = import_errors(bug(), rubric(revisions=[revision(""), edit(author=3), 5]))
    assert [(e.line, e.field) for e in errors] == [
        (2, "revisions[0].text"),
        (2, "revisions[1].author"),
        (2, "revisions[2]"),
    ]


def test_two_rubrics_of_one_bug_and_variant_in_a_file_are_refused() -> None:
    errors = import_errors(bug(), rubric(), rubric(variant="free_form"), rubric())
    assert [(e.line, e.field) for e in errors] == [(4, "bug")]
    assert errors[0].message == DUPLICATE_IN_FILE.format(
        kind="rubric", what="for bug 'BUG-1' (templated)", first=2
    )


def test_a_rubric_of_an_invalid_bug_says_so() -> None:
    errors = import_errors(bug(severity="high"), rubric())
    assert [(e.line, e.field) for e in errors] == [(1, "severity"), (2, "bug")]
    assert errors[1].message == INVALID_REFERENCE.format(kind="bug", key="BUG-1", line=1)


def test_reimporting_the_same_rubrics_changes_nothing() -> None:
    records = (bug(), rubric(confirmed_by="reviewer-b"), rubric(variant="free_form"))
    import_records(*records)
    before = list(Rubric.objects.values_list("pk", "status", "current_number", "updated_at"))
    counts = (RubricRevision.objects.count(), RubricEvent.objects.count())

    summary = import_records(*records)

    assert summary.unchanged
    assert rubric_counts(summary) == (0, 0, 2)
    assert list(Rubric.objects.values_list("pk", "status", "current_number", "updated_at")) == (
        before
    )
    assert (RubricRevision.objects.count(), RubricEvent.objects.count()) == counts


def test_a_file_that_continues_a_rubric_appends_its_new_revisions(lead: User) -> None:
    import_records(bug(), rubric(revisions=[revision()]))
    first_draft = RubricRevision.objects.get()

    summary = import_records(
        rubric(revisions=[revision(), edit(), edit("Final.\n", author="reviewer-c")]),
        user=lead,
    )

    assert rubric_counts(summary) == (0, 1, 0)
    assert RubricRevision.objects.get(number=0) == first_draft  # history is kept, not rewritten
    assert history() == [
        (0, DRAFT_TEXT, "llm:gemini-2.5-pro"),
        (1, EDITED_TEXT, "reviewer-a"),
        (2, "Final.\n", "reviewer-c"),
    ]
    imported = Rubric.objects.get()
    assert (imported.current_number, imported.status) == (2, Rubric.Status.IN_REVIEW)
    assert events()[-1] == ("imported", "lead", br.IMPORTED_REVISIONS.format(first=1, last=2))


def test_a_later_file_may_confirm_a_rubric_already_imported() -> None:
    import_records(bug(), rubric())
    summary = import_records(rubric(confirmed_by="reviewer-b"))
    assert rubric_counts(summary) == (0, 1, 0)
    imported = Rubric.objects.get()
    assert imported.status == Rubric.Status.GOLDEN
    assert imported.golden_revision == imported.revisions.get(number=1)
    assert [kind for kind, _, _ in events()] == ["imported", "confirmed"]


def test_new_revisions_of_a_golden_rubric_keep_the_golden_revision_until_confirmed() -> None:
    import_records(bug(), rubric(revisions=[revision()], confirmed_by="reviewer-b"))
    golden = RubricRevision.objects.get()
    import_records(rubric())
    imported = Rubric.objects.get()
    assert (imported.status, imported.golden_revision) == (Rubric.Status.IN_REVIEW, golden)
    assert events()[-1][2] == br.IMPORTED_REVISION.format(first=1)


def test_a_rubric_being_drafted_is_filled_by_the_file() -> None:
    import_records(bug())
    waiting = Rubric.objects.create(bug=Bug.objects.get(), status=Rubric.Status.DRAFT_FAILED)
    summary = import_records(rubric())
    assert rubric_counts(summary) == (0, 1, 0)
    waiting.refresh_from_db()
    assert (waiting.status, waiting.current_number) == (Rubric.Status.IN_REVIEW, 1)


@pytest.mark.parametrize(
    ("changed", "fields"),
    [
        (edit("Another text.\n"), "text"),
        (edit(author="reviewer-z"), "author"),
        (edit(justification="another reason", themes=["scope"]), "justification, themes"),
    ],
)
def test_a_file_that_contradicts_a_rubric_s_history_is_refused(
    changed: dict[str, Any], fields: str
) -> None:
    import_records(bug(), rubric())
    before = (history(), events(), list(Rubric.objects.values_list("updated_at", flat=True)))

    errors = import_errors(bug(title="changed too"), rubric(revisions=[revision(), changed]))

    assert [(e.line, e.field) for e in errors] == [(2, "revisions")]
    assert errors[0].message == br.HISTORY_CONFLICT.format(number=1, fields=fields)
    assert before == (
        history(),
        events(),
        list(Rubric.objects.values_list("updated_at", flat=True)),
    )
    assert Bug.objects.get().title != "changed too"  # all or nothing


def test_a_file_behind_the_dataset_leaves_the_rubric_and_says_so() -> None:
    import_records(bug(), rubric())
    summary = import_records(rubric(revisions=[revision()], confirmed_by="reviewer-b"))
    assert rubric_counts(summary) == (0, 0, 1)
    assert br.DATASET_AHEAD_NOTE.format(count=1, bugs="BUG-1") in summary.notes
    assert Rubric.objects.get().status == Rubric.Status.IN_REVIEW


def test_a_rubric_changed_in_the_app_during_the_import_fails_it_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Validation saw no history (as if read before a reviewer saved); the write sees it."""
    import_records(bug(), rubric(revisions=[revision()]))
    RubricRevision.objects.filter(number=0).update(text="Edited meanwhile.\n")
    monkeypatch.setattr(br, "_dataset_histories", lambda dataset: {})

    with pytest.raises(BundleImportError) as excinfo:
        import_records(bug(title="new title"), rubric())

    (error,) = excinfo.value.errors
    assert (error.line, error.field) == (2, "revisions")
    assert error.message == br.CHANGED_DURING_IMPORT.format(bug="BUG-1", variant="templated")
    assert RubricRevision.objects.count() == 1
    assert Bug.objects.get().title != "new title"


def test_rubrics_export_after_the_other_records_and_round_trip_byte_identical() -> None:
    import_records(
        bug("BUG-2"),
        bug("BUG-1"),
        patch("P-1"),
        label("P-1"),
        rubric("BUG-2", revisions=[revision("Text ✓\r\n  with  spaces  ")]),
        rubric("BUG-1", variant="free_form", revisions=[revision("Free.\n")]),
        rubric("BUG-1", confirmed_by="Reviewer-B"),
    )
    first = export_text()
    kinds = [json.loads(line)["kind"] for line in first.splitlines()]
    assert kinds == ["bug", "bug", "patch", "label", "rubric", "rubric", "rubric"]
    exported = [json.loads(line) for line in first.splitlines()[-3:]]
    assert [(r["bug"], r["variant"]) for r in exported] == [
        ("BUG-1", "free_form"),
        ("BUG-1", "templated"),
        ("BUG-2", "templated"),
    ]
    assert exported[1] == rubric(revisions=[revision(themes=[]), edit()], confirmed_by="Reviewer-B")
    assert "confirmed_by" not in exported[0]

    copy = bundle_import(source=io.BytesIO(first.encode()), dataset_name="Copy", actor=None)
    assert first == "".join(bundle_export(dataset=copy.dataset))
    again = bundle_import(source=io.BytesIO(first.encode()), dataset_name="Demo", actor=None)
    assert again.unchanged


def test_rubrics_made_in_the_app_export_their_authors_and_confirmer(reviewer: User) -> None:
    confirmer = user_create(actor=None, username="reviewer2", password=None, roles=[Role.REVIEWER])
    import_records(bug())
    drafted = Rubric.objects.create(bug=Bug.objects.get(), variant=Rubric.Variant.TEMPLATED)
    drafted = rubric_draft_write(rubric_id=drafted.pk)
    structure = dict(drafted.revisions.get().structure) | {"root_cause": "Off by one."}
    rubric_revise(
        rubric=drafted,
        base_number=0,
        structure=structure,
        justification="clearer",
        themes=["standardization"],
        actor=reviewer,
    )
    rubric_submit(rubric=drafted, base_number=1, actor=reviewer)
    rubric_confirm(rubric=drafted, base_number=1, actor=confirmer)
    Rubric.objects.create(bug=Bug.objects.get(), variant=Rubric.Variant.FREE_FORM)  # no draft

    (line,) = [json.loads(x) for x in export_text().splitlines() if '"kind": "rubric"' in x]
    draft, edited = line["revisions"]
    assert draft["author"].startswith("llm:offline/")
    assert (edited["author"], edited["justification"], edited["themes"]) == (
        "reviewer",
        "clearer",
        ["standardization"],
    )
    assert line["confirmed_by"] == "reviewer2"

    first = export_text()
    copy = bundle_import(source=io.BytesIO(first.encode()), dataset_name="Copy", actor=None)
    assert first == "".join(bundle_export(dataset=copy.dataset))
    copied = Rubric.objects.get(bug__dataset=copy.dataset)
    assert copied.status == Rubric.Status.GOLDEN
    assert copied.revisions.get(number=1).author_user == reviewer
    assert RubricEvent.objects.filter(rubric=copied, kind="confirmed").get().actor == confirmer


def test_a_golden_rubric_with_an_edit_awaiting_confirmation_exports_without_confirmer() -> None:
    import_records(bug(), rubric(revisions=[revision()], confirmed_by="reviewer-b"))
    import_records(rubric())
    (line,) = [json.loads(x) for x in export_text().splitlines() if '"kind": "rubric"' in x]
    assert "confirmed_by" not in line
    assert len(line["revisions"]) == 2
