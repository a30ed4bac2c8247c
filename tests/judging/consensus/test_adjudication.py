"""Recording a lead's consensus (its validation) and the adjudication queue (its order,
contents and counts, for a dataset or one campaign)."""

import pytest
from django.contrib.auth.models import User

from judging.consensus.adjudication import (
    NOT_DECISIVE,
    OTHER_NEEDS_NOTE,
    THEMES_REQUIRED,
    UNKNOWN_THEME,
    AdjudicationError,
    adjudication_counts,
    adjudication_queue,
    adjudication_record,
)
from judging.consensus.rules import State
from judging.models import Adjudication, Assignment, Campaign, DisagreementTheme, Label
from rubrics.models import Dataset, Patch
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
Theme = DisagreementTheme


def labelled(patch: Patch, *labels: str, notes: tuple[str, ...] = ()) -> Patch:
    """Give ``patch`` one label per annotator ann, bob, cyd…, with optional notes."""
    names = ["ann", "bob", "cyd", "dan"]
    for index, label in enumerate(labels):
        note = notes[index] if index < len(notes) else ""
        AnnotationFactory(
            patch=patch, annotator=UserFactory(username=names[index]), label=label, note=note
        )
    return patch


@pytest.fixture
def disputed() -> Patch:
    return labelled(PatchFactory(), VALID, INVALID, notes=("looks right", "misses the null case"))


def test_recording_stores_the_consensus_with_themes_and_note(disputed: Patch, lead: User) -> None:
    adjudication = adjudication_record(
        patch=disputed,
        label=INVALID,
        themes=[Theme.CORRECTNESS_ASSESSMENT, Theme.OVERLOOKED_REQUIREMENTS],
        note="  The null case is a requirement.  ",
        actor=lead,
    )
    adjudication.refresh_from_db()
    assert adjudication.label == INVALID
    # Each theme once, in the order of paper 004 §5.2.1.
    assert adjudication.themes == [Theme.OVERLOOKED_REQUIREMENTS, Theme.CORRECTNESS_ASSESSMENT]
    assert adjudication.note == "The null case is a requirement."
    assert adjudication.decided_by == lead


def test_recording_again_updates_the_one_adjudication(disputed: Patch, lead: User) -> None:
    adjudication_record(
        patch=disputed, label=INVALID, themes=[Theme.RUBRIC_AMBIGUITY], note="", actor=lead
    )
    other = UserFactory(username="lead2")
    adjudication_record(
        patch=disputed, label=VALID, themes=[Theme.UNNECESSARY_CHANGES], note="", actor=other
    )
    adjudication = Adjudication.objects.get(patch=disputed)
    assert (adjudication.label, adjudication.themes, adjudication.decided_by) == (
        VALID,
        [Theme.UNNECESSARY_CHANGES],
        other,
    )
    assert Adjudication.objects.count() == 1


@pytest.mark.parametrize(
    ("label", "themes", "note", "message", "field"),
    [
        (UNSURE, [Theme.RUBRIC_AMBIGUITY], "", NOT_DECISIVE.format(label=UNSURE), "label"),
        ("", [Theme.RUBRIC_AMBIGUITY], "", NOT_DECISIVE.format(label=""), "label"),
        (VALID, [], "", THEMES_REQUIRED, "themes"),
        (VALID, [Theme.OTHER], "   ", OTHER_NEEDS_NOTE, "note"),
        (
            VALID,
            ["vibes"],
            "",
            UNKNOWN_THEME.format(theme="vibes", known=", ".join(Theme.values)),
            "themes",
        ),
    ],
)
def test_recording_refuses(
    disputed: Patch,
    lead: User,
    label: str,
    themes: list[str],
    note: str,
    message: str,
    field: str,
) -> None:
    with pytest.raises(AdjudicationError) as refused:
        adjudication_record(patch=disputed, label=label, themes=themes, note=note, actor=lead)
    assert (str(refused.value), refused.value.field) == (message, field)
    assert not Adjudication.objects.exists()


def test_other_with_a_note_is_accepted(disputed: Patch, lead: User) -> None:
    adjudication_record(
        patch=disputed,
        label=VALID,
        themes=[Theme.OTHER],
        note="A flaky test misled bob.",
        actor=lead,
    )
    assert Adjudication.objects.get(patch=disputed).themes == [Theme.OTHER]


@pytest.mark.parametrize("labels", [(VALID,), (VALID, UNSURE), (UNSURE, UNSURE), ()])
def test_a_patch_without_disagreement_needs_no_theme(lead: User, labels: tuple[str, ...]) -> None:
    patch = labelled(PatchFactory(), *labels)
    adjudication_record(patch=patch, label=VALID, themes=[], note="", actor=lead)
    assert Adjudication.objects.get(patch=patch).themes == []


@pytest.fixture
def dataset() -> Dataset:
    """Bugs B-1, B-2; per bug: a unanimous, a disputed and a too-few patch."""
    dataset = DatasetFactory(slug="adj")
    for bug_key in ("B-2", "B-1"):  # created out of order: the queue sorts by key
        bug = BugFactory(dataset=dataset, key=bug_key)
        labelled(PatchFactory(bug=bug, key=f"{bug_key}-unanimous"), VALID, VALID, UNSURE)
        labelled(PatchFactory(bug=bug, key=f"{bug_key}-disputed"), INVALID, VALID)
        labelled(PatchFactory(bug=bug, key=f"{bug_key}-few"), INVALID, UNSURE)
        PatchFactory(bug=bug, key=f"{bug_key}-unlabelled")
    return dataset


def keys(items: list) -> list[str]:
    return [item.patch.key for item in items]


def test_the_queue_lists_disputed_patches_first_then_too_few(dataset: Dataset) -> None:
    queue = adjudication_queue(dataset=dataset)
    assert keys(queue.waiting) == ["B-1-disputed", "B-2-disputed", "B-1-few", "B-2-few"]
    assert queue.adjudicated == []
    counts = queue.counts
    assert (counts.unanimous, counts.adjudicated, counts.waiting) == (2, 0, 4)
    assert (counts.disputed, counts.too_few, counts.unlabelled) == (2, 2, 0)


def test_the_queue_shows_every_label_with_its_annotator_and_note(dataset: Dataset) -> None:
    item = adjudication_queue(dataset=dataset).waiting[0]
    assert item.patch.bug.key == "B-1"
    assert [(given.annotator, given.label) for given in item.labels] == [
        ("ann", INVALID),
        ("bob", VALID),
    ]
    assert item.disputed
    assert item.consensus.state == State.DISPUTED
    few = adjudication_queue(dataset=dataset).waiting[2]
    assert [given.label for given in few.labels] == [INVALID, UNSURE]  # UNSURE shown too
    assert not few.disputed


def test_adjudicated_patches_leave_the_waiting_list_and_stay_listed(
    dataset: Dataset, lead: User
) -> None:
    patch = dataset.patches.get(key="B-2-disputed")
    adjudication_record(
        patch=patch, label=INVALID, themes=[Theme.RUBRIC_AMBIGUITY], note="", actor=lead
    )
    queue = adjudication_queue(dataset=dataset)
    assert keys(queue.waiting) == ["B-1-disputed", "B-1-few", "B-2-few"]
    assert keys(queue.adjudicated) == ["B-2-disputed"]
    assert queue.adjudicated[0].adjudication.label == INVALID
    assert queue.adjudicated[0].theme_labels == ["Rubric ambiguity"]
    counts = adjudication_counts(dataset=dataset)
    assert (counts.unanimous, counts.adjudicated, counts.waiting) == (2, 1, 3)


def test_the_queue_of_a_campaign_has_only_its_patches(dataset: Dataset, lead: User) -> None:
    campaign = Campaign.objects.create(dataset=dataset, name="Calibration", created_by=lead)
    for position, key in enumerate(["B-1-disputed", "B-1-unanimous", "B-1-unlabelled"], 1):
        Assignment.objects.create(
            campaign=campaign, patch=dataset.patches.get(key=key), annotator=lead, position=position
        )
    queue = adjudication_queue(dataset=dataset, campaign=campaign)
    assert keys(queue.waiting) == ["B-1-disputed"]
    counts = queue.counts
    assert (counts.unanimous, counts.waiting, counts.unlabelled) == (1, 1, 1)


def test_the_queue_of_a_campaign_must_be_on_its_dataset(dataset: Dataset, lead: User) -> None:
    elsewhere = Campaign.objects.create(dataset=DatasetFactory(), name="Other", created_by=lead)
    with pytest.raises(AdjudicationError):
        adjudication_queue(dataset=dataset, campaign=elsewhere)
