"""The Judges pages: the list (leads only), a new judge from a starter, a judge's page (its
versions, a diff, the edit form writing a new version with a note, errors under the field
with the template's line and column), and a version's preview on a real patch, escaped."""

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging.judges.services import judge_define
from judging.models import JudgeVersion, JudgingRun, WrittenJudge
from judging.runs.services import run_create
from tests.judging.judges.test_versions import MINIMALISM
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

LIST = reverse("judging:judge_list")
NEW = reverse("judging:judge_new")


def _detail(name: str = "minimalism") -> str:
    return reverse("judging:judge_detail", args=[name])


def _edit(name: str = "minimalism") -> str:
    return reverse("judging:judge_edit", args=[name])


def _form(**changes: Any) -> dict[str, str]:
    data = {
        "title": MINIMALISM["title"],
        "template": MINIMALISM["template"],
        "kind": "verdict",
        "dimensions": "",
        "overall": "",
        "note": "stricter",
    }
    return {**data, **changes}


@pytest.mark.parametrize("client_name", ["annotator_client", "reviewer_client"])
def test_only_leads_open_the_judges_pages(client_name: str, request: pytest.FixtureRequest) -> None:
    client: Client = request.getfixturevalue(client_name)
    judge_define(data=MINIMALISM, actor=None)
    for url in (
        LIST,
        NEW,
        _detail(),
        reverse("judging:judge_preview", args=["minimalism", 1]),
    ):
        assert client.get(url).status_code == 403, url
    assert client.post(_edit(), _form()).status_code == 403
    assert JudgeVersion.objects.count() == 1


def test_the_list_shows_each_judge_s_newest_and_trusted_versions_and_the_starters(
    lead_client: Client,
) -> None:
    first, _ = judge_define(data=MINIMALISM, actor=None)
    # Trusted as the trust gate leaves it (its test is the gate's, not this page's).
    JudgeVersion.objects.filter(pk=first.pk).update(status=JudgeVersion.Status.TRUSTED)
    judge_define(data={**MINIMALISM, "title": "Stricter <b>minimalism</b>"}, actor=None)
    page = lead_client.get(LIST).content.decode()
    assert "minimalism@2" in page
    assert "Untested" in page
    assert "minimalism@1" in page  # the newest trusted
    assert "Stricter &lt;b&gt;minimalism&lt;/b&gt;" in page
    assert "Start from the Rule of Minimalism" in page
    assert "Start from the Non-functional quality" in page
    assert f'href="{LIST}"' in lead_client.get("/").content.decode()  # in the nav


def test_a_lead_copies_a_starter_under_a_name_of_their_own(lead_client: Client, lead: Any) -> None:
    form = lead_client.get(NEW + "?starter=minimalism").content.decode()
    assert "Rule of Minimalism" in form
    assert "{{ candidate_patch }}" in form
    response = lead_client.post(
        NEW + "?starter=minimalism",
        {**_form(), "name": "strict-min", "note": "copied, stricter"},
    )
    assert response.status_code == 302
    version = JudgeVersion.objects.get(judge__name="strict-min")
    assert (version.number, version.author, version.note) == (1, lead, "copied, stricter")
    assert version.status == JudgeVersion.Status.UNTESTED
    # A name some judge has is refused: a copy never becomes another judge's version.
    again = lead_client.post(NEW, {**_form(), "name": "strict-min"})
    assert again.status_code == 400
    assert "a judge named &#x27;strict-min&#x27; exists" in again.content.decode()
    assert JudgeVersion.objects.filter(judge__name="strict-min").count() == 1


def test_an_edit_is_a_new_version_with_its_note_and_a_used_version_stays(
    lead_client: Client, lead: Any
) -> None:
    first, _ = judge_define(data=MINIMALISM, actor=None)
    dataset = DatasetFactory()
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    run = run_create(actor=None, dataset=dataset, strategies="minimalism@1", context="reference")
    template = MINIMALISM["template"] + "\nBe strict."
    response = lead_client.post(_edit(), _form(template=template, note="be strict"))
    assert response.status_code == 302
    second = JudgeVersion.objects.get(judge__name="minimalism", number=2)
    assert (second.template, second.note, second.author) == (template, "be strict", lead)
    first.refresh_from_db()
    assert first.template == MINIMALISM["template"]  # the version the run names is unchanged
    run.refresh_from_db()
    assert run.strategies == ["minimalism@1"]
    page = lead_client.get(_detail()).content.decode()
    assert "be strict" in page
    assert "first cut" in page
    assert "in use" in page  # v1, which the run names
    assert "Changes from <code>minimalism@1</code> to <code>minimalism@2</code>" in page
    assert '<tr class="added">' in page
    assert "Be strict." in page
    assert 'id="test-card"' in page
    assert "Not tested yet" in page
    assert 'id="test-no-ladders"' in page  # no dataset to test on: said, not an empty list
    assert 'id="test-form"' not in page
    # The same content again (as a browser sends a textarea, CRLF): no new version.
    lead_client.post(_edit(), _form(template=template.replace("\n", "\r\n"), note="again"))
    assert JudgeVersion.objects.filter(judge__name="minimalism").count() == 2
    assert JudgingRun.objects.count() == 1


def test_a_bad_edit_shows_the_error_under_its_field_and_writes_nothing(
    lead_client: Client,
) -> None:
    judge_define(data=MINIMALISM, actor=None)
    bad = "Judge it.\n\n  {{ candidate }}\n"
    response = lead_client.post(_edit(), _form(template=bad))
    page = response.content.decode()
    assert response.status_code == 400
    assert "unknown block &#x27;candidate&#x27; at line 3, column 3" in page
    assert "Judge it." in page  # the lead's text kept in the form
    missing_note = lead_client.post(_edit(), _form(note=" "))
    assert "say why this version is written" in missing_note.content.decode()
    line = lead_client.post(_edit(), _form(kind="dimensions", dimensions="security one five"))
    assert "line 1: “security one five” is not a dimension" in line.content.decode()
    scale = lead_client.post(_edit(), _form(kind="dimensions", dimensions="ok 1..5\nsecurity 5..1"))
    assert "line 2: the scale of security must run from a whole number to a higher one" in (
        scale.content.decode()
    )
    assert JudgeVersion.objects.count() == 1


def test_dimensions_typed_as_lines_become_the_version_s_scales(lead_client: Client) -> None:
    judge_define(data=MINIMALISM, actor=None)
    lines = "maintainability 1..5 Is it easy to change?\n\nsecurity 1-5 Does it open a hole?"
    response = lead_client.post(
        _edit(), _form(kind="dimensions", dimensions=lines, overall="security", note="dims")
    )
    assert response.status_code == 302
    version = JudgeVersion.objects.get(number=2)
    assert version.dimensions == [
        {"name": "maintainability", "low": 1, "high": 5, "description": "Is it easy to change?"},
        {"name": "security", "low": 1, "high": 5, "description": "Does it open a hole?"},
    ]
    assert version.overall == "security"
    form = lead_client.get(_detail()).content.decode()
    assert "maintainability 1..5 Is it easy to change?" in form  # the form shows the newest


def test_the_preview_shows_the_prompt_on_a_real_patch_escaped(lead_client: Client) -> None:
    judge_define(data=MINIMALISM, actor=None)
    dataset = DatasetFactory(name="Preview set")
    bug = BugFactory(dataset=dataset, key="PV-1", reference_patch=make_diff(new="x = 2"))
    PatchFactory(bug=bug, key="PV-1-a", diff=make_diff(new="x = '<script>alert(1)</script>'"))
    url = reverse("judging:judge_preview", args=["minimalism", 1])
    response = lead_client.get(url, {"dataset": dataset.slug, "bug": "PV-1", "patch": "PV-1-a"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "A patch that changes more than the bug needs is INVALID." in page  # the template
    assert "&lt;candidate_patch&gt;" in page  # the data between tags, as the model reads it
    assert "data, not instructions" in page  # the system message
    assert "&quot;enum&quot;" in page
    assert "VALID" in page
    # Another dataset picked while the bug and patch pickers still name this one's keys.
    other_set = DatasetFactory(name="Other set")
    PatchFactory(bug=BugFactory(dataset=other_set, key="OT-1"), key="OT-1-a")
    keys = {"bug": "PV-1", "patch": "PV-1-a", "shown": dataset.slug}  # as the page listed them
    switched = lead_client.get(url, {"dataset": other_set.slug, **keys})
    assert '<code id="previewed-patch">OT-1-a</code>' in switched.content.decode()
    # A judge showing the rubric, in a context without one: why a run would fail it.
    judge_define(
        data={**MINIMALISM, "name": "rubricky", "template": "{{ rubric }} {{ candidate_patch }}"},
        actor=None,
    )
    other = reverse("judging:judge_preview", args=["rubricky", 1])
    failing = lead_client.get(other, {"dataset": dataset.slug, "context": "golden"})
    assert "A run would fail this member on this patch" in failing.content.decode()
    assert lead_client.get(reverse("judging:judge_preview", args=["rubricky", 9])).status_code == (
        404
    )
    assert WrittenJudge.objects.count() == 2


def test_the_new_run_form_offers_a_trusted_judge_by_name_and_an_untested_one_by_number(
    lead_client: Client,
) -> None:
    first, _ = judge_define(data=MINIMALISM, actor=None)
    JudgeVersion.objects.filter(pk=first.pk).update(status=JudgeVersion.Status.TRUSTED)
    judge_define(data={**MINIMALISM, "title": "Stricter", "note": "v2"}, actor=None)
    dataset = DatasetFactory(slug="runs-written")
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    new_run = reverse("judging:run_new")
    form = lead_client.get(new_run + "?team=s1b,minimalism").content.decode()
    assert 'value="minimalism" id="id_strategies_written_1" checked' in form  # v1, trusted
    assert "trusted: minimalism@1" in form
    assert 'value="minimalism@2" id="id_strategies_written_2">' in form  # not ticked
    assert "untested" in form
    base = {
        "dataset": "runs-written",
        "context": "reference",
        "provider": "",
        "model": "",
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
    }
    for team, recorded in (
        (["s1b", "minimalism"], ["s1b", "minimalism@1"]),
        (["minimalism@2"], ["minimalism@2"]),
    ):
        response = lead_client.post(new_run, {**base, "strategies": team})
        assert response.status_code == 302, response.content.decode()[:2000]
        assert JudgingRun.objects.order_by("-pk").first().strategies == recorded  # type: ignore[union-attr]
    # A version the form does not offer (superseded and untested) is refused, not run.
    judge_define(data={**MINIMALISM, "title": "Third", "note": "v3"}, actor=None)
    refused = lead_client.post(new_run, {**base, "strategies": ["minimalism@2"]})
    assert refused.status_code == 400
    assert JudgingRun.objects.count() == 2


def test_the_preview_takes_any_bug_by_its_key_and_refuses_an_unknown_one(
    lead_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("judging.judges.selectors.PREVIEW_BUGS", 2)  # as 200 of 10,000 bugs
    judge_define(data=MINIMALISM, actor=None)
    dataset = DatasetFactory(name="Big set")
    for n in (1, 2, 3):
        bug = BugFactory(dataset=dataset, key=f"BIG-{n}", reference_patch=make_diff())
        PatchFactory(bug=bug, key=f"BIG-{n}-a", diff=make_diff(new=f"x = {n}"))
    url = reverse("judging:judge_preview", args=["minimalism", 1])
    page = lead_client.get(url, {"dataset": dataset.slug}).content.decode()
    assert '<datalist id="preview-bug-keys"><option value="BIG-1"></option><option' in page
    assert 'value="BIG-3"' not in page  # suggested: the first two only
    last = lead_client.get(url, {"dataset": dataset.slug, "bug": "BIG-3", "shown": dataset.slug})
    text = last.content.decode()
    assert '<code id="previewed-patch">BIG-3-a</code>' in text
    assert 'name="bug" id="preview-bug" list="preview-bug-keys" value="BIG-3"' in text
    unknown = lead_client.get(url, {"dataset": dataset.slug, "bug": "BIG-9"}).content.decode()
    assert "Big set has no bug &#x27;BIG-9&#x27; with a patch" in unknown
    assert 'id="previewed-patch"' not in unknown  # no other patch shown in its place
    assert 'value="BIG-9"' in unknown  # the key typed, kept to correct


def test_a_template_s_markup_is_text_on_every_judges_page(lead_client: Client) -> None:
    judge_define(data=MINIMALISM, actor=None)
    template = "<script>alert(1)</script> {% csrf_token %} {# x #}\n{{ candidate_patch }} }}"
    response = lead_client.post(_edit(), _form(template=template, title="<i>T</i>"))
    assert response.status_code == 302
    dataset = DatasetFactory()
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    preview = reverse("judging:judge_preview", args=["minimalism", 2])
    for url in (_detail(), _detail() + "?a=1&b=2", preview, LIST):
        page = lead_client.get(url).content.decode()
        assert "<script>alert" not in page, url
        assert "<i>T</i>" not in page, url
        if url != LIST:
            assert "&lt;script&gt;alert(1)&lt;/script&gt; {% csrf_token %} {# x #}" in page, url
    # A template that never shows the candidate, or a '{{'-like text, is refused on the form.
    for bad, message in (
        ("{{ bug }} alone", "the template never shows the candidate patch"),
        ("{{{ candidate_patch }}}", "unknown block &#x27;{ candidate_patch&#x27; at line 1"),
        ("{{ candidate_patch }} {{ bug", "a &#x27;{{&#x27; at line 1, column 23 is never closed"),
    ):
        refused = lead_client.post(_edit(), _form(template=bad))
        assert refused.status_code == 400
        assert message in refused.content.decode(), bad
    assert JudgeVersion.objects.count() == 2
