"""Label Studio both ways: a campaign's patches out as tasks with a labelling config to
match, Label Studio's JSON export of them back in as labels, all or nothing."""

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from judging.annotations.labelstudio.export import labelling_config, tasks_export
from judging.annotations.labelstudio.import_ import (
    LabelStudioImportError,
    labelstudio_import,
    users_mapping,
)
from judging.annotations.labelstudio.names import CAMPAIGN_FIELD, DATASET_FIELD, PATCH_FIELD
from judging.annotations.selectors import UNKNOWN_CAMPAIGN
from judging.models import Annotation, AnnotationRevision, Campaign, Label
from rubrics.models import BundleImport, Dataset
from sejury_web.audit import audit_events
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD
from tests.judging.annotations.labelstudio_files import (
    Given,
    LSUser,
    labelstudio_export,
    patch_ids,
)
from tests.judging.factories import create_campaign, finished_run
from tests.rubrics.factories import (
    DRAFT_TEXT,
    GOLDEN_TEXT,
    BugFactory,
    DatasetFactory,
    PatchFactory,
    make_diff,
    rubric_for,
)

pytestmark = pytest.mark.django_db

# Label Studio's users: its own ids; their e-mails are how we know them.
ANN = LSUser(11, "Ann@Example.org")  # our "annotator", whose e-mail is ann@example.org
BEA = LSUser(12, "rater-b@example.org")  # our "rater-b", by e-mail
NEW = LSUser(13, "carol@example.org")  # nobody here yet: a new annotator, as in a bundle


@pytest.fixture
def dataset() -> Dataset:
    dataset = DatasetFactory(name="LS demo", slug="ls-demo")
    first = BugFactory(dataset=dataset, key="BUG-A", title="Totals skip the first item")
    second = BugFactory(dataset=dataset, key="BUG-B", title="")
    rubric_for(first, draft=DRAFT_TEXT, golden=GOLDEN_TEXT)
    rubric_for(second, draft=DRAFT_TEXT)
    for n, bug in enumerate([first, first, second, second]):
        PatchFactory(bug=bug, key=f"P-{n}", diff=make_diff(new=f"total = {n + 40}"))
    return dataset


@pytest.fixture
def people(annotator: User) -> list[User]:
    annotator.email = "ann@example.org"
    annotator.save()
    rater = user_create(
        actor=None,
        username="rater-b",
        email="rater-b@example.org",
        password=PASSWORD,
        roles=[Role.ANNOTATOR],
    )
    return [annotator, rater]


@pytest.fixture
def campaign(dataset: Dataset, people: list[User], lead: User) -> Campaign:
    return create_campaign(dataset, people, name="Round LS", actor=lead)


def as_file(exported: Any) -> bytes:
    return json.dumps(exported, indent=2).encode()


def labels_of(dataset: Dataset) -> dict[tuple[str, str], tuple[str, str]]:
    return {
        (a.patch.key, a.annotator.username): (a.label, a.note)
        for a in Annotation.objects.filter(patch__dataset=dataset).select_related(
            "patch", "annotator"
        )
    }


# What the round trip's annotators give in Label Studio, task by task (patches P-0…P-3).
GIVEN = {
    0: [Given(ANN, "VALID", "Same fix as the developer's."), Given(BEA, "VALID")],
    1: [Given(ANN, "INVALID", "Skips the guard.\nAlso breaks the loop."), Given(BEA, "UNSURE")],
    2: [Given(ANN, "UNSURE"), Given(BEA, cancelled=True), Given(NEW, "INVALID", "Overfits.")],
    3: [Given(BEA, "INVALID", "Deletes the test's path")],
}
EXPECTED = {
    ("P-0", "annotator"): ("VALID", "Same fix as the developer's."),
    ("P-0", "rater-b"): ("VALID", ""),
    ("P-1", "annotator"): ("INVALID", "Skips the guard.\nAlso breaks the loop."),
    ("P-1", "rater-b"): ("UNSURE", ""),
    ("P-2", "annotator"): ("UNSURE", ""),
    ("P-2", "carol@example.org"): ("INVALID", "Overfits."),
    ("P-3", "rater-b"): ("INVALID", "Deletes the test's path"),
}


def test_a_round_trip_gives_the_labels_annotated_in_label_studio(
    campaign: Campaign, lead: User
) -> None:
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    assert [t["data"][PATCH_FIELD] for t in tasks] == patch_ids(["P-0", "P-1", "P-2", "P-3"])
    # The tasks go to Label Studio as JSON and come back in its export.
    exported = labelstudio_export(json.loads(json.dumps(tasks)), GIVEN)

    summary = labelstudio_import(
        source=io.BytesIO(as_file(exported)),
        dataset=campaign.dataset,
        campaign=campaign,
        actor=lead,
        filename="project-7-at-2025-05-12.json",
    )

    assert labels_of(campaign.dataset) == EXPECTED
    assert (summary.counts.created, summary.counts.updated, summary.skipped) == (7, 0, 1)
    assert summary.new_annotators == ["carol@example.org"]
    carol = User.objects.get(username="carol@example.org")
    assert carol.groups.filter(name=Role.ANNOTATOR).exists()
    assert not carol.has_usable_password()
    assert set(Annotation.objects.values_list("origin", flat=True)) == {"imported"}
    assert AnnotationRevision.objects.count() == 7
    (event,) = audit_events(campaign)[:1]
    assert (event.action, event.actor) == ("labelstudio_import", lead)
    assert event.detail["created"] == 7
    assert BundleImport.objects.get().imported_by == lead

    # Importing the same export again changes nothing.
    again = labelstudio_import(
        source=as_file(exported), dataset=campaign.dataset, campaign=campaign, actor=lead
    )
    assert (again.counts.created, again.counts.updated, again.counts.unchanged) == (0, 0, 7)
    assert again.unchanged
    assert again.new_annotators == []
    assert labels_of(campaign.dataset) == EXPECTED
    assert AnnotationRevision.objects.count() == 7


def test_a_changed_annotation_updates_its_label_and_history(campaign: Campaign) -> None:
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    labelstudio_import(
        source=as_file(labelstudio_export(tasks, GIVEN)),
        dataset=campaign.dataset,
        campaign=campaign,
        actor=None,
    )
    changed = GIVEN | {3: [Given(BEA, "VALID", "On second look, fine.")]}
    summary = labelstudio_import(
        source=as_file(labelstudio_export(tasks, changed)),
        dataset=campaign.dataset,
        campaign=campaign,
        actor=None,
    )
    assert (summary.counts.updated, summary.counts.unchanged) == (1, 6)
    assert labels_of(campaign.dataset)[("P-3", "rater-b")] == ("VALID", "On second look, fine.")
    revisions = AnnotationRevision.objects.filter(annotation__patch__key="P-3")
    assert list(revisions.order_by("id").values_list("label", flat=True)) == ["INVALID", "VALID"]


def test_ids_without_user_details_are_matched_through_a_users_file(campaign: Campaign) -> None:
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    # Label Studio's Export › JSON: completed_by is the bare user id.
    exported = as_file(labelstudio_export(tasks, GIVEN, user_details=False))
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(source=exported, dataset=campaign.dataset, campaign=campaign, actor=None)
    # One error for the file, naming the ids and the two ways to say who they are.
    (error,) = raised.value.errors
    assert (error.task, error.annotation, error.field) == (0, 0, "completed_by")
    assert "Label Studio user ids only (11, 12, 13)" in error.message
    assert "GET /api/users" in error.message
    assert "export snapshot with user details" in error.message
    assert not Annotation.objects.exists()

    # Label Studio's user list (GET /api/users, also as a page of results), or a plain
    # {id: name or e-mail}.
    listing = [
        {"id": 11, "email": "ann@example.org", "username": "ann", "first_name": "Ann"},
        {"id": 12, "email": "rb@labelstudio.example", "username": "rater-b"},
        {"id": 13, "email": "carol@example.org", "username": "carol"},
    ]
    for index, users in enumerate(
        (
            users_mapping(json.dumps(listing).encode()),
            users_mapping(json.dumps({"count": 3, "results": listing}).encode()),
            users_mapping(b'{"11": "annotator", "12": "RATER-B", "13": "carol@example.org"}'),
        )
    ):
        Annotation.objects.all().delete()
        summary = labelstudio_import(
            source=exported, dataset=campaign.dataset, campaign=campaign, users=users, actor=None
        )
        assert labels_of(campaign.dataset) == EXPECTED
        # A new annotator is named by the e-mail, not Label Studio's user name (the first
        # import made carol@example.org; the next ones find her).
        assert summary.new_annotators == (["carol@example.org"] if index == 0 else [])
    assert not User.objects.filter(username="carol").exists()

    # An id the users file does not name is an error of each annotation by it.
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(
            source=exported,
            dataset=campaign.dataset,
            campaign=campaign,
            users=users_mapping(b'{"11": "annotator", "12": "rater-b"}'),
            actor=None,
        )
    assert where(raised.value) == [(3, 3, "completed_by")]
    assert "user id 13, which the users file does not name" in raised.value.errors[0].message


def test_a_label_studio_user_is_ours_by_user_name_before_e_mail(
    campaign: Campaign, people: list[User]
) -> None:
    """Label Studio's annotator2 is our annotator2, though its e-mail is another's (or
    nobody's): the user name is matched first, then the e-mail."""
    annotator2 = user_create(
        actor=None, username="annotator2", email="", password=PASSWORD, roles=[Role.ANNOTATOR]
    )
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    given = {0: [Given(LSUser(21, "x@labelstudio.example"), "VALID")], 1: [Given(ANN, "UNSURE")]}
    exported = as_file(labelstudio_export(tasks, given, user_details=False))
    listing = [
        {"id": 21, "username": "annotator2", "email": "annotator2@example.org"},
        # Its user name is nobody's here; its e-mail is our annotator's.
        {"id": 11, "username": "ann.lee", "email": "ANN@example.org"},
    ]
    summary = labelstudio_import(
        source=exported,
        dataset=campaign.dataset,
        campaign=campaign,
        users=users_mapping(json.dumps(listing).encode()),
        actor=None,
    )
    assert summary.new_annotators == []
    assert labels_of(campaign.dataset) == {
        ("P-0", annotator2.username): ("VALID", ""),
        ("P-1", people[0].username): ("UNSURE", ""),
    }
    assert not User.objects.filter(username__icontains="@").exists()


def test_a_patch_imported_twice_into_label_studio_is_one_label_if_labelled_alike(
    campaign: Campaign,
) -> None:
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    # The project holds P-0 twice (its tasks imported twice): tasks 1 and 5.
    twice = [*tasks, tasks[0]]
    alike = GIVEN | {4: [Given(ANN, "VALID", "Same fix as the developer's."), Given(BEA, "VALID")]}
    summary = labelstudio_import(
        source=as_file(labelstudio_export(twice, alike)),
        dataset=campaign.dataset,
        campaign=campaign,
        actor=None,
    )
    assert labels_of(campaign.dataset) == EXPECTED
    assert (summary.counts.created, summary.duplicates) == (7, 2)
    assert "2 identical annotations of a patch in two tasks counted once" in str(summary)

    # Labelled differently in the two tasks: refused, naming both.
    Annotation.objects.all().delete()
    unlike = GIVEN | {
        4: [Given(ANN, "VALID", "Same fix as the developer's."), Given(BEA, "INVALID")]
    }
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(
            source=as_file(labelstudio_export(twice, unlike)),
            dataset=campaign.dataset,
            campaign=campaign,
            actor=None,
        )
    (error,) = raised.value.errors
    assert str(error) == (
        "task 5 (id 505), annotation 2, completed_by: rater-b labelled this patch differently"
        " in task 1 (id 501), annotation 2 (VALID, no note, here INVALID, no note): the patch"
        " is in the Label Studio project twice; make the two labels the same or delete one"
    )
    assert not Annotation.objects.exists()


def broken(campaign: Campaign, change: Any) -> LabelStudioImportError:
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    exported = labelstudio_export(tasks, GIVEN)
    change(exported)
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(
            source=as_file(exported), dataset=campaign.dataset, campaign=campaign, actor=None
        )
    assert not Annotation.objects.exists()
    assert not BundleImport.objects.exists()
    assert not User.objects.filter(username="carol@example.org").exists()
    return raised.value


def where(error: LabelStudioImportError) -> list[tuple[int, int, str]]:
    return [(e.task, e.annotation, e.field) for e in error.errors]


def test_a_task_of_an_unknown_patch_imports_nothing(campaign: Campaign) -> None:
    def unknown(exported: list[dict[str, Any]]) -> None:
        exported[2]["data"][PATCH_FIELD] = 404_404

    error = broken(campaign, unknown)
    # One error per annotation of the task, at the task and annotation.
    assert where(error) == [(3, 1, "data.sejury_patch_id"), (3, 3, "data.sejury_patch_id")]
    assert "no patch 404404" in error.errors[0].message
    assert str(error.errors[0]).startswith("task 3 (id 503), annotation 1, data.sejury_patch_id: ")


def test_an_unknown_choice_imports_nothing(campaign: Campaign) -> None:
    def odd(exported: list[dict[str, Any]]) -> None:
        exported[1]["annotations"][1]["result"][0]["value"]["choices"] = ["Maybe"]

    error = broken(campaign, odd)
    assert where(error) == [(2, 2, "result (label)")]
    assert "unknown label 'Maybe'" in error.errors[0].message


def test_every_problem_is_reported_at_once(campaign: Campaign, lead: User) -> None:
    lead.email = "lead@example.org"
    lead.save()

    def many(exported: list[dict[str, Any]]) -> None:
        exported[0]["annotations"][0]["result"] = []  # chose nothing
        exported[0]["annotations"][1]["result"][0]["value"]["choices"] = ["VALID", "INVALID"]
        exported[1]["data"][CAMPAIGN_FIELD] = campaign.pk + 1
        exported[2]["annotations"][0]["completed_by"] = {"id": 1, "email": "lead@example.org"}
        again = dict(exported[3]["annotations"][0], id=1)
        again["result"] = [dict(again["result"][0], value={"choices": ["VALID"]})]
        exported[3]["annotations"].append(again)

    error = broken(campaign, many)
    assert where(error) == [
        (1, 1, "result (label)"),
        (1, 2, "result (label)"),
        (2, 0, "data.sejury_campaign"),
        (3, 1, "completed_by"),
        (4, 2, "completed_by"),
    ]
    messages = [e.message for e in error.errors]
    assert "chose nothing" in messages[0]
    assert "VALID, INVALID" in messages[1]
    assert f"campaign {campaign.pk + 1}, not of campaign {campaign.pk}" in messages[2]
    assert "without the annotator role" in messages[3]
    assert "labelled this patch differently in task 4 (id 504), annotation 1" in messages[4]
    assert """(INVALID, note "Deletes the test's path", here VALID, no note)""" in messages[4]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'[{"id": 1, "data": {}', "not JSON: "),
        (b'{"tasks": []}', "a list of tasks, got dict"),
        (b"[]", "no annotation to import (0 skipped"),
        (b'[{"id": 3, "label": "VALID", "annotator": 2}]', "JSON-MIN"),
        (b'[{"id": 3, "data": {"text": "x"}, "annotations": []}]', "not a task exported by"),
        ("\ufeff[".encode() + b"\xff]", "not UTF-8"),
    ],
)
def test_a_malformed_file_imports_nothing(campaign: Campaign, content: bytes, message: str) -> None:
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(source=content, dataset=campaign.dataset, campaign=campaign, actor=None)
    assert message in str(raised.value)
    assert not Annotation.objects.exists()


def test_the_position_of_invalid_json_is_given() -> None:
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(source=b'[\n  {"id": 1,,}\n]', dataset=Dataset(slug="x"), actor=None)
    assert "(line 2, column 12)" in str(raised.value)


def test_a_task_of_another_dataset_is_refused(campaign: Campaign) -> None:
    other = DatasetFactory(name="Other", slug="other")
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(
            source=as_file(labelstudio_export(tasks, GIVEN)), dataset=other, actor=None
        )
    assert where(raised.value)[0] == (1, 0, f"data.{DATASET_FIELD}")
    assert "of dataset 'ls-demo', not 'other'" in raised.value.errors[0].message


# The config and the tasks


def config_tags(config: str) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(config)  # noqa: S314 - our own output, parsed to prove it well-formed
    return root, {e.attrib["name"]: e for e in root.iter() if "name" in e.attrib}


def test_the_config_names_what_the_tasks_and_predictions_use(campaign: Campaign) -> None:
    run = finished_run(
        campaign.dataset,
        {p: ("VALID" if p.key != "P-1" else "INVALID", {}) for p in campaign.dataset.patches.all()},
        team=["s1b", "s3"],
    )
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign, run=run)
    root, tags = config_tags(labelling_config(with_rubric=True))
    assert root.tag == "View"
    choices, note = tags["label"], tags["note"]
    assert (choices.tag, choices.attrib["choice"], choices.attrib["required"]) == (
        "Choices",
        "single-radio",
        "true",
    )
    assert [c.attrib["value"] for c in choices] == Label.values
    assert note.tag == "TextArea"
    for control in (choices, note):
        assert tags[control.attrib["toName"]].tag == "Text"
    # Every $variable of the config is in every task's data.
    variables = {e.attrib["value"][1:] for e in root.iter() if e.attrib.get("value", "")[:1] == "$"}
    assert variables == {"title", "description", "reference_patch", "rubric", "diff"}
    for task in tasks:
        assert variables <= set(task["data"])
        (prediction,) = task["predictions"]
        (item,) = prediction["result"]
        assert (item["from_name"], item["to_name"], item["type"]) == ("label", "diff", "choices")
        assert item["value"]["choices"][0] in [c.attrib["value"] for c in choices]
        assert OFFLINE_MARKER in prediction["model_version"]
        assert f"run {run.pk}" in prediction["model_version"]
    assert [t["predictions"][0]["result"][0]["value"]["choices"] for t in tasks] == [
        ["VALID"],
        ["INVALID"],
        ["VALID"],
        ["VALID"],
    ]
    first = tasks[0]["data"]
    assert first["title"] == "BUG-A: Totals skip the first item"
    assert first["rubric"] == GOLDEN_TEXT
    assert tasks[2]["data"]["title"] == "BUG-B"
    assert (first[DATASET_FIELD], first[PATCH_FIELD], first[CAMPAIGN_FIELD]) == (
        "ls-demo",
        *patch_ids(["P-0"]),
        campaign.pk,
    )
    # No patch key anywhere in a task: keys can name the repair tool.
    assert not any("P-" in json.dumps(task) for task in tasks)


def test_the_diffs_are_in_monospace_by_a_style_rule_not_a_style_attribute() -> None:
    """Label Studio's page sets its font on everything with !important: a View's style
    attribute never reaches the text (tests/label_studio checks it in a real browser)."""
    root, tags = config_tags(labelling_config(with_rubric=True))
    (style,) = root.iter("Style")
    assert "font-family: monospace !important" in (style.text or "")
    assert "white-space: pre-wrap !important" in (style.text or "")
    code = [
        v
        for v in root.iter("View")
        if tags["diff"] in list(v) or tags["reference_patch"] in list(v)
    ]
    assert [v.attrib for v in code] == [{"className": "sejury-code"}] * 2
    assert f".{code[0].attrib['className']} *" in (style.text or "")
    assert not any("style" in e.attrib for e in root.iter())


def test_a_campaign_export_carries_no_verdict_unless_asked(campaign: Campaign) -> None:
    patches = list(campaign.dataset.patches.all())
    finished_run(
        campaign.dataset,
        {p: ("INVALID", {}) for p in patches},
        team=["s1b"],
        name="RUN-NAME-secret",
    )
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    assert all(set(t) == {"data"} for t in tasks)
    text = json.dumps(tasks)
    for secret in ("INVALID", "RUN-NAME-secret", "s1b"):
        assert secret not in text
    # Nor the patch's source (a repair tool's name) or its test result.
    assert all("source" not in t["data"] and "tests_pass" not in t["data"] for t in tasks)


def test_a_real_models_verdicts_are_not_marked_offline(campaign: Campaign) -> None:
    patches = list(campaign.dataset.patches.all())
    run = finished_run(
        campaign.dataset,
        {patches[0]: ("VALID", {}), patches[1]: ("", {})},
        team=["s1b"],
        provider="openai",
        model="gpt-4.1",
        threshold=50.0,
    )
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign, run=run)
    prediction = tasks[0]["predictions"][0]
    assert prediction["model_version"] == f"SE-Jury run {run.pk}: s1b (openai gpt-4.1)"
    assert prediction["score"] == 0.5  # how sure: 100 is half the scale from 50
    # A failed or unjudged patch has no prediction.
    assert [len(t["predictions"]) for t in tasks] == [1, 0, 0, 0]


def test_a_campaign_without_the_rubric_exports_none(dataset: Dataset, people: list[User]) -> None:
    campaign = create_campaign(dataset, people, show_rubric=False)
    tasks = tasks_export(dataset=dataset, campaign=campaign)
    assert all("rubric" not in t["data"] for t in tasks)
    _, tags = config_tags(labelling_config(with_rubric=False))
    assert "rubric" not in tags


def test_a_dataset_export_has_every_patch_and_imports_back(
    dataset: Dataset, campaign: Campaign
) -> None:
    extra = PatchFactory(bug=dataset.bugs.get(key="BUG-B"), key="P-9", diff=make_diff(new="t=9"))
    tasks = tasks_export(dataset=dataset)
    assert [t["data"][PATCH_FIELD] for t in tasks][-1] == extra.pk
    assert {t["data"][CAMPAIGN_FIELD] for t in tasks} == {None}
    # A dataset's tasks are not a campaign's.
    exported = as_file(labelstudio_export(tasks, {4: [Given(ANN, "VALID")]}))
    with pytest.raises(LabelStudioImportError):
        labelstudio_import(source=exported, dataset=dataset, campaign=campaign, actor=None)
    labelstudio_import(source=exported, dataset=dataset, actor=None)
    assert labels_of(dataset) == {("P-9", "annotator"): ("VALID", "")}


# The commands


def test_the_commands_export_and_import(campaign: Campaign, tmp_path: Path) -> None:
    tasks_file, config_file = tmp_path / "tasks.json", tmp_path / "config.xml"
    call_command(
        "labelstudio_export",
        campaign=campaign.pk,
        output=tasks_file,
        config=config_file,
        stderr=io.StringIO(),
    )
    tasks = json.loads(tasks_file.read_text())
    ET.fromstring(config_file.read_text())  # noqa: S314 - our own output
    exported = tmp_path / "export.json"
    exported.write_bytes(as_file(labelstudio_export(tasks, GIVEN, user_details=False)))
    users = tmp_path / "users.json"
    users.write_text('{"11": "annotator", "12": "rater-b", "13": "carol@example.org"}')

    with pytest.raises(CommandError, match="nothing was imported:\ncompleted_by: the annotators"):
        call_command("labelstudio_import", str(exported), campaign=campaign.pk)
    out = io.StringIO()
    call_command("labelstudio_import", str(exported), campaign=campaign.pk, users=users, stdout=out)
    assert "7 labels created" in out.getvalue()
    assert labels_of(campaign.dataset) == EXPECTED


def test_the_export_command_takes_a_runs_verdicts_only_of_the_same_dataset(
    campaign: Campaign,
) -> None:
    run = finished_run(campaign.dataset, {}, team=["s1b"])
    other = finished_run(DatasetFactory(name="Else", slug="else"), {}, team=["s1b"])
    out = io.StringIO()
    call_command("labelstudio_export", dataset="LS demo", with_predictions=run.pk, stdout=out)
    assert all(t["predictions"] == [] for t in json.loads(out.getvalue()))
    with pytest.raises(CommandError, match="judged dataset 'Else'"):
        call_command("labelstudio_export", dataset="ls-demo", with_predictions=other.pk)
    with pytest.raises(CommandError, match=UNKNOWN_CAMPAIGN.format(campaign=999)):
        call_command("labelstudio_export", campaign=999)


def test_a_user_without_a_role_is_named_once_and_imported_when_the_lead_gives_it(
    campaign: Campaign, lead: User
) -> None:
    """As a bundle's labels (issue 28): refused once per user, imported with the option."""
    carol = User.objects.create(username="carol", email="carol@example.org")
    carol.set_unusable_password()
    carol.save()
    tasks = tasks_export(dataset=campaign.dataset, campaign=campaign)
    exported = as_file(labelstudio_export(json.loads(json.dumps(tasks)), GIVEN))

    def run(*, grant: bool) -> None:
        labelstudio_import(
            source=io.BytesIO(exported),
            dataset=campaign.dataset,
            campaign=campaign,
            actor=lead,
            grant_annotator_role=grant,
        )

    with pytest.raises(LabelStudioImportError) as raised:
        run(grant=False)
    (error,) = raised.value.errors
    assert "'carol' (named by this line) is an existing user without the annotator role" in str(
        error
    )
    run(grant=True)
    assert labels_of(campaign.dataset)[("P-2", "carol")] == ("INVALID", "Overfits.")
    assert [e.action for e in audit_events(carol)] == ["user.roles"]
