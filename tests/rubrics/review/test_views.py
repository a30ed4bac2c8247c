"""The review screen through its views: permissions, the editor, saves, conflicts, the
confirmation rules, the queue, and escaping."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rubrics.models import Rubric, RubricEvent
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.selectors import (
    QUEUE_EMPTY_CONFIRM,
    QUEUE_EMPTY_DISAGREED,
    QUEUE_EMPTY_REVIEW,
    QUEUE_EMPTY_SENT_BACK,
)
from rubrics.review.services import (
    COMMENT_REQUIRED,
    JUSTIFICATION_REQUIRED,
    OWN_WORK,
    rubric_revise,
    rubric_send_back,
    rubric_submit,
)
from rubrics.review.textdiff import line_diff
from rubrics.rubric_text import EMPTY_ROOT_CAUSE
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD, client_for
from tests.rubrics.factories import BugFactory, PatchFactory, editor_form

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def reviewer2_client(reviewer2: User) -> Client:
    return client_for(reviewer2)


def draft(**bug: Any) -> Rubric:
    """A bug with a candidate patch and its templated rubric, drafted by the offline model."""
    bug_row = BugFactory(**bug)
    PatchFactory(bug=bug_row, key=f"{bug_row.key}-p1")
    rubric = Rubric.objects.create(bug=bug_row, variant=Rubric.Variant.TEMPLATED)
    return rubric_draft_write(rubric_id=rubric.pk)


@pytest.fixture
def drafted(db: None) -> Rubric:
    return draft()


def url(rubric: Rubric, name: str = "edit") -> str:
    kwargs = {"slug": rubric.bug.dataset.slug, "bug_key": rubric.bug.key}
    return reverse(f"rubrics:rubric_{name}", kwargs={**kwargs, "variant": rubric.variant})


# -- permissions and pages ------------------------------------------------------------------


def test_annotators_get_403_everywhere(annotator_client: Client, drafted: Rubric) -> None:
    assert annotator_client.get(url(drafted)).status_code == 403
    assert annotator_client.get(reverse("rubrics:review_queue")).status_code == 403
    for name in ("editor", "preview", "save", "submit", "confirm", "send_back"):
        assert annotator_client.post(url(drafted, name), editor_form(drafted)).status_code == 403


def test_a_lead_reads_the_rubric_but_cannot_change_it(lead_client: Client, drafted: Rubric) -> None:
    page = lead_client.get(url(drafted))

    assert page.status_code == 200
    html = page.content.decode()
    assert 'fieldset class="editor-fields" disabled' in html
    assert 'id="rubric-save"' not in html
    assert "editing, submitting and confirming are for reviewers" in html
    for name in ("editor", "preview", "save", "submit"):
        data = editor_form(drafted, justification="x", root_cause="changed")
        assert lead_client.post(url(drafted, name), data).status_code == 403
    assert lead_client.get(reverse("rubrics:review_queue")).status_code == 403
    assert drafted.revisions.count() == 1


def test_a_lead_who_is_also_a_reviewer_may_save(drafted: Rubric) -> None:
    both = user_create(
        actor=None, username="both", password=PASSWORD, roles=[Role.LEAD, Role.REVIEWER]
    )
    client = Client()
    client.force_login(both)

    data = editor_form(drafted, root_cause="A lead's root cause.", justification="clearer")
    response = client.post(url(drafted, "save"), data, **HX)

    assert response.status_code == 200
    assert drafted.revisions.get(number=1).author_user == both


def test_unknown_bugs_and_variants_are_404(reviewer_client: Client, drafted: Rubric) -> None:
    slug, key = drafted.bug.dataset.slug, drafted.bug.key
    edit = "rubrics:rubric_edit"
    assert reviewer_client.get(reverse(edit, args=[slug, "NOPE", "templated"])).status_code == 404
    assert reviewer_client.get(reverse(edit, args=[slug, key, "fancy"])).status_code == 404


def test_a_bug_without_a_draft_says_so_with_its_status(reviewer_client: Client) -> None:
    bug = BugFactory()
    page_url = reverse("rubrics:rubric_edit", args=[bug.dataset.slug, bug.key, "templated"])

    page = reviewer_client.get(page_url)
    assert page.status_code == 200
    assert "Not drafted yet" in page.content.decode()

    rubric = Rubric.objects.create(bug=bug, variant="templated")
    assert "Drafting…" in reviewer_client.get(page_url).content.decode()

    rubric.status, rubric.draft_error = Rubric.Status.DRAFT_FAILED, "the model timed out <b>"
    rubric.save()
    html = reviewer_client.get(page_url).content.decode()
    assert "The draft failed" in html
    assert "the model timed out &lt;b&gt;" in html
    assert "Retry the draft" in html
    # Posting to an undrafted rubric's editor is a 404, not a crash.
    assert reviewer_client.post(page_url + "save/", {"base_number": 0}).status_code == 404


def test_the_editor_shows_the_draft_with_the_bug_and_the_offline_label(
    reviewer_client: Client, drafted: Rubric
) -> None:
    structure = drafted.revisions.get().structure

    html = reviewer_client.get(url(drafted)).content.decode()

    # Said once, in the notice above the editor, not on every line of the draft.
    assert html.count(OFFLINE_MARKER) == 2  # the notice, and revision 0 in the history
    assert 'id="offline-draft-note"' in html
    assert OFFLINE_MARKER not in structure["root_cause"]
    assert 'name="root_cause"' in html
    assert 'name="requirement_title"' in html
    assert 'name="base_number" value="0"' in html
    assert "Change `f()` near line 2" in structure["requirements"][0]["title"]
    assert "Change `f()` near line 2" in html
    assert 'class="markdown"' in html  # the rendered preview
    assert drafted.bug.description in html
    assert "diff-table" in html  # the reference and candidate patches as diffs
    assert f"{drafted.bug.key}-p1" in html
    assert "Save as revision 1" in html
    assert "in review" in html


def test_the_bug_page_links_to_its_rubric(reviewer_client: Client, drafted: Rubric) -> None:
    html = reviewer_client.get(drafted.bug.get_absolute_url()).content.decode()
    assert f'href="{url(drafted)}"' in html


# -- the editor's unsaved state ------------------------------------------------------------


def test_adding_a_requirement_keeps_what_was_typed_and_saves_nothing(
    reviewer_client: Client, drafted: Rubric
) -> None:
    data = editor_form(
        drafted,
        root_cause="My unsaved root cause.",
        justification="my unsaved reason",
        themes=["scope"],
        op="add:requirements",
    )

    response = reviewer_client.post(url(drafted, "editor"), data, **HX)

    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html  # only the partial
    assert "My unsaved root cause." in html
    assert "my unsaved reason" in html
    assert 'value="scope" checked' in html
    assert html.count('name="requirement_title"') == 2
    assert 'id="requirements-1" name="requirement_title" value=""' in html
    assert "autofocus" in html
    assert 'id="rubric-preview"' in html
    assert 'hx-swap-oob="true"' in html
    assert drafted.revisions.count() == 1


def test_moving_and_removing_items_reorders_the_unsaved_state(
    reviewer_client: Client, drafted: Rubric
) -> None:
    data = editor_form(
        drafted,
        requirement_title=["First", "Second", "Third"],
        requirement_detail=["one", "two", "three"],
        acceptable=["A", "B"],
    )

    moved = reviewer_client.post(url(drafted, "editor"), {**data, "op": "up:requirements:2"}, **HX)
    html = moved.content.decode()
    assert html.index('value="First"') < html.index('value="Third"') < html.index('value="Second"')

    removed = reviewer_client.post(url(drafted, "editor"), {**data, "op": "remove:acceptable:0"})
    html = removed.content.decode()
    assert removed.status_code == 200
    assert "<html" in html  # without htmx, the whole page
    assert ">B</textarea>" in html
    assert ">A</textarea>" not in html

    bad = reviewer_client.post(url(drafted, "editor"), {**data, "op": "up:requirements:9"}, **HX)
    assert bad.status_code == 400
    assert drafted.revisions.count() == 1


def test_the_preview_renders_the_unsaved_state(reviewer_client: Client, drafted: Rubric) -> None:
    data = editor_form(drafted, root_cause="Now **bold**.")
    html = reviewer_client.post(url(drafted, "preview"), data, **HX).content.decode()
    assert "<strong>bold</strong>" in html
    assert 'id="rubric-changes" hx-swap-oob="true"' in html
    assert "Your unsaved edit" in html

    empty = reviewer_client.post(
        url(drafted, "preview"), editor_form(drafted, root_cause=" "), **HX
    )
    assert f"Not ready to save: {EMPTY_ROOT_CAUSE}" in empty.content.decode()


def test_a_free_form_rubric_is_edited_as_one_markdown_text(
    reviewer_client: Client, drafted: Rubric
) -> None:
    bug = drafted.bug
    rubric = Rubric.objects.create(bug=bug, variant=Rubric.Variant.FREE_FORM)
    rubric = rubric_draft_write(rubric_id=rubric.pk)

    html = reviewer_client.get(url(rubric)).content.decode()
    assert 'name="text"' in html
    assert 'name="root_cause"' not in html

    data = {
        "base_number": 0,
        "mode": "text",
        "text": "A valid fix\r\nreturns 2.",
        "justification": "x",
    }
    reviewer_client.post(url(rubric, "save"), data, **HX)
    assert rubric.revisions.get(number=1).text == "A valid fix\nreturns 2.\n"


# -- saving ---------------------------------------------------------------------------------


def test_save_creates_a_justified_revision_with_themes(
    reviewer_client: Client, reviewer: User, drafted: Rubric
) -> None:
    data = editor_form(
        drafted,
        root_cause="f() returns 1 where callers expect 2.",
        justification="The draft's root cause was a skeleton.",
        themes=["hallucination", "standardization"],
    )

    response = reviewer_client.post(url(drafted, "save"), data, **HX)

    assert response.status_code == 200
    revision = drafted.revisions.get(number=1)
    assert revision.author_user == reviewer
    assert revision.justification == "The draft's root cause was a skeleton."
    assert revision.themes == ["hallucination", "standardization"]
    assert revision.structure["root_cause"] == "f() returns 1 where callers expect 2."
    assert RubricEvent.objects.filter(rubric=drafted, kind="revised", revision=revision).exists()
    html = response.content.decode()
    assert "Saved revision 1." in html
    assert 'name="base_number" value="1"' in html
    assert 'id="rubric-history" hx-swap-oob="true"' in html
    assert "The draft&#x27;s root cause was a skeleton." in html
    assert "Correcting LLM errors &amp; hallucinations" in html


def test_save_without_htmx_redirects_to_the_new_revision(
    reviewer_client: Client, drafted: Rubric
) -> None:
    data = editor_form(drafted, root_cause="Plain form post.", justification="no js")

    response = reviewer_client.post(url(drafted, "save"), data, follow=True)

    assert response.redirect_chain == [(url(drafted), 302)]
    html = response.content.decode()
    assert "Saved revision 1." in html
    assert "Plain form post." in html


def test_a_save_without_justification_shows_the_error_and_keeps_the_edit(
    reviewer_client: Client, drafted: Rubric
) -> None:
    data = editor_form(drafted, root_cause="An edit I must not lose.", justification="  ")

    response = reviewer_client.post(url(drafted, "save"), data, **HX)

    html = response.content.decode()
    assert response.status_code == 200  # htmx swaps only 2xx answers
    assert JUSTIFICATION_REQUIRED in html
    assert 'aria-invalid="true"' in html
    assert "An edit I must not lose." in html
    assert drafted.revisions.count() == 1
    plain = reviewer_client.post(url(drafted, "save"), data)
    assert plain.status_code == 400
    assert "An edit I must not lose." in plain.content.decode()


def test_a_conflicting_save_keeps_the_edit_and_a_second_save_applies_it(
    reviewer_client: Client, reviewer2_client: Client, drafted: Rubric
) -> None:
    # Both open revision 0.
    assert reviewer_client.get(url(drafted)).status_code == 200
    assert reviewer2_client.get(url(drafted)).status_code == 200
    first = editor_form(drafted, root_cause="First reviewer's root cause.", justification="first")
    mine = editor_form(
        drafted,
        requirement_title=["Second reviewer's requirement"],
        justification="second",
    )
    assert reviewer_client.post(url(drafted, "save"), first, **HX).status_code == 200

    refused = reviewer2_client.post(url(drafted, "save"), mine, **HX)

    html = refused.content.decode()
    assert refused.status_code == 200
    assert "reviewer saved revision 1 meanwhile" in html
    assert "Their justification: <q>first</q>" in html
    assert "First reviewer&#x27;s root cause." in html  # in the diff of their change
    assert 'value="Second reviewer&#x27;s requirement"' in html
    assert ">second</textarea>" in html
    assert 'name="base_number" value="1"' in html
    assert drafted.revisions.count() == 2

    again = reviewer2_client.post(url(drafted, "save"), {**mine, "base_number": 1}, **HX)

    assert "Saved revision 2." in again.content.decode()
    revision = drafted.revisions.get(number=2)
    assert revision.structure["requirements"][0]["title"] == "Second reviewer's requirement"
    assert revision.author == "reviewer2"


# -- submit, confirm, send back ------------------------------------------------------------


def _edited(rubric: Rubric, author: User) -> Rubric:
    structure = {**rubric.revisions.get(number=0).structure, "root_cause": "Edited."}
    rubric_revise(
        rubric=rubric, base_number=0, structure=structure, justification="x", actor=author
    )
    rubric.refresh_from_db()
    return rubric


def test_the_author_submits_but_cannot_confirm_a_second_reviewer_confirms(
    reviewer_client: Client, reviewer2_client: Client, reviewer: User, drafted: Rubric
) -> None:
    rubric = _edited(drafted, reviewer)

    submitted = reviewer_client.post(url(rubric, "submit"), {"base_number": 1}, **HX)
    assert "Submitted revision 1 for confirmation." in submitted.content.decode()
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.AWAITING_CONFIRMATION

    page = reviewer_client.get(url(rubric)).content.decode()
    assert "You can't confirm this rubric" in page
    assert "Confirm revision 1 as golden" not in page
    own = reviewer_client.post(url(rubric, "confirm"), {"base_number": 1}, **HX)
    assert OWN_WORK in own.content.decode()
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.AWAITING_CONFIRMATION

    assert "Confirm revision 1 as golden" in reviewer2_client.get(url(rubric)).content.decode()
    confirmed = reviewer2_client.post(url(rubric, "confirm"), {"base_number": 1}, **HX)
    assert "Revision 1 is now the golden rubric." in confirmed.content.decode()
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.GOLDEN
    assert rubric.golden_revision.number == 1
    page = reviewer2_client.get(url(rubric)).content.decode()
    assert "saving an edit starts revision 2, which needs a new confirmation" in page


def test_the_second_reviewer_lands_on_the_changes_with_their_justifications(
    reviewer_client: Client,
    reviewer2_client: Client,
    lead_client: Client,
    reviewer: User,
    drafted: Rubric,
) -> None:
    structure = {**drafted.revisions.get(number=0).structure, "root_cause": "Edited."}
    why = "The draft's root cause was read off the diff."
    rubric_revise(
        rubric=drafted, base_number=0, structure=structure, justification=why, actor=reviewer
    )
    rubric = Rubric.objects.get(pk=drafted.pk)
    opens_on_changes = 'data-open="tab-changes"'
    # In review: every reviewer keeps the tab they last chose.
    assert opens_on_changes not in reviewer2_client.get(url(rubric)).content.decode()
    rubric_submit(rubric=rubric, base_number=1, actor=reviewer)

    page = reviewer2_client.get(url(rubric)).content.decode()
    assert opens_on_changes in page
    reasons = page.split('id="rubric-change-reasons"')[1].split("</ul>")[0]
    assert "<strong>r1</strong>" in reasons
    assert "The draft&#x27;s root cause was read off the diff." in reasons
    # Not for the author, who may not confirm, nor for a lead, who reads.
    assert opens_on_changes not in reviewer_client.get(url(rubric)).content.decode()
    assert opens_on_changes not in lead_client.get(url(rubric)).content.decode()


def test_sending_back_needs_a_comment_and_shows_it(
    reviewer_client: Client, reviewer2_client: Client, reviewer: User, drafted: Rubric
) -> None:
    rubric = _edited(drafted, reviewer)
    rubric_submit(rubric=rubric, base_number=1, actor=reviewer)

    empty = reviewer2_client.post(url(rubric, "send_back"), {"base_number": 1}, **HX)
    assert COMMENT_REQUIRED in empty.content.decode()

    sent = reviewer2_client.post(
        url(rubric, "send_back"), {"base_number": 1, "comment": "Requirement 1 overfits."}
    )
    assert sent.status_code == 302
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.SENT_BACK
    page = reviewer_client.get(url(rubric)).content.decode()
    assert "Requirement 1 overfits." in page
    assert "Submit revision 1 for confirmation" in page


def test_acting_on_a_stale_revision_asks_to_reload(
    reviewer_client: Client, reviewer2_client: Client, reviewer: User, drafted: Rubric
) -> None:
    rubric = _edited(drafted, reviewer)
    response = reviewer2_client.post(url(rubric, "submit"), {"base_number": 0}, **HX)
    assert "reviewer saved revision 1 meanwhile: reload the page" in response.content.decode()
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.IN_REVIEW


# -- the queue ------------------------------------------------------------------------------


def test_the_queue_lists_what_awaits_review_my_confirmation_and_what_came_back(
    reviewer_client: Client, reviewer: User, reviewer2: User
) -> None:
    untouched = draft(key="UNTOUCHED")
    mine_submitted = _edited(draft(key="MINE-SUBMITTED"), reviewer)
    rubric_submit(rubric=mine_submitted, base_number=1, actor=reviewer)
    theirs_submitted = _edited(draft(key="THEIRS-SUBMITTED"), reviewer2)
    rubric_submit(rubric=theirs_submitted, base_number=1, actor=reviewer2)
    mine_back = _edited(draft(key="MINE-BACK"), reviewer)
    rubric_submit(rubric=mine_back, base_number=1, actor=reviewer)
    mine_back.refresh_from_db()
    rubric_send_back(rubric=mine_back, base_number=1, actor=reviewer2, comment="Too long")

    response = reviewer_client.get(reverse("rubrics:review_queue"))

    queue = response.context["queue"]
    assert [r.bug.key for r in queue.awaiting_review.rubrics] == ["UNTOUCHED"]
    assert [r.bug.key for r in queue.awaiting_my_confirmation.rubrics] == ["THEIRS-SUBMITTED"]
    assert [r.bug.key for r in queue.sent_back_to_me.rubrics] == ["MINE-BACK"]
    html = response.content.decode()
    assert f'href="{url(untouched)}"' in html
    assert "sent back by reviewer2" in html
    assert "Too long" in html
    queue_link = f'href="{reverse("rubrics:review_queue")}"'
    assert queue_link in html  # in the nav
    # What waits comes first; the empty part (the judge's disagreements) is one line after
    # it, with the home page's words, and keeps its anchor.
    assert html.index('id="queue-review"') < html.index('id="queue-disagreed"')
    assert f'<li id="queue-disagreed" data-queue-part="disagreed">{QUEUE_EMPTY_DISAGREED}</li>' in (
        html
    )


def test_an_empty_queue_is_a_line_a_part(reviewer_client: Client) -> None:
    html = reviewer_client.get(reverse("rubrics:review_queue")).content.decode()
    assert "<table" not in html
    assert 'class="card queue-section"' not in html
    for line in (QUEUE_EMPTY_CONFIRM, QUEUE_EMPTY_SENT_BACK, QUEUE_EMPTY_DISAGREED):
        assert line in html
    assert html.index(QUEUE_EMPTY_CONFIRM) < html.index(QUEUE_EMPTY_REVIEW)


def test_only_reviewers_have_the_queue_in_their_nav(
    reviewer_client: Client, lead_client: Client
) -> None:
    queue_link = f'href="{reverse("rubrics:review_queue")}"'
    assert queue_link in reviewer_client.get(reverse("rubrics:dataset_list")).content.decode()
    assert queue_link not in lead_client.get(reverse("rubrics:dataset_list")).content.decode()


def test_the_queue_costs_the_same_for_many_rubrics(
    reviewer_client: Client, reviewer2: User
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert reviewer_client.get(reverse("rubrics:review_queue")).status_code == 200
        return len(captured)

    draft()
    few = queries()
    for _ in range(5):
        draft()
        rubric = _edited(draft(), reviewer2)
        rubric_submit(rubric=rubric, base_number=1, actor=reviewer2)
    assert queries() == few


# -- escaping and the diff ------------------------------------------------------------------


def test_user_text_is_never_rendered_as_html(
    reviewer_client: Client, reviewer: User, drafted: Rubric
) -> None:
    script = "<script>alert(1)</script>"
    bug = drafted.bug
    bug.description = f'Crash on <img src=x onerror="alert(2)"> and {script}'
    bug.title = script
    bug.save()
    structure = {**drafted.revisions.get().structure, "root_cause": f"Evil {script}"}
    structure["requirements"] = [{"title": script, "detail": f"**bold** {script}"}]
    rubric_revise(
        rubric=drafted,
        base_number=0,
        structure=structure,
        justification=script,
        actor=reviewer,
    )
    drafted.refresh_from_db()

    html = reviewer_client.get(url(drafted)).content.decode()
    preview = reviewer_client.post(url(drafted, "preview"), editor_form(drafted), **HX)

    for page in (html, preview.content.decode()):
        assert script not in page
        assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<strong>bold</strong>" in preview.content.decode()


def test_line_diff_marks_changed_words_and_escapes() -> None:
    diff = line_diff("keep\nold <b> word\ngone\n", "keep\nnew <b> word\nadded\n")

    assert (diff.added, diff.removed) == (2, 2)
    kinds = [row.kind for row in diff.rows]
    assert kinds == ["context", "removed", "removed", "added", "added"]
    assert diff.rows[1].html == "<del>old</del> &lt;b&gt; word"
    assert diff.rows[3].html == "<ins>new</ins> &lt;b&gt; word"
    assert not line_diff("same\n", "same").changed
    around = line_diff("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nd\ne\nF\n", context=1)
    assert [row.kind for row in around.rows] == ["skip", "context", "removed", "added"]
