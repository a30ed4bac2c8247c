"""Recording a lead's consensus (its validation), the adjudication queue (its order,
contents and counts, for a dataset or one campaign, under either consensus rule), and
changing the rule."""

import gc
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models.signals import post_init

from judging.consensus import selectors
from judging.consensus.rules import UNKNOWN_RULE, ConsensusRule, State
from judging.consensus.selectors import (
    CAMPAIGN_ELSEWHERE,
    AdjudicationError,
    QueueWindow,
    adjudication_counts,
    adjudication_item,
    adjudication_queue,
    adjudication_queue_outline,
    queue_window,
)
from judging.consensus.services import (
    CAMPAIGN_CONSENSUS_RULE,
    DATASET_CONSENSUS_RULE,
    NOT_DECISIVE,
    OTHER_NEEDS_NOTE,
    THEMES_REQUIRED,
    UNKNOWN_THEME,
    adjudication_record,
    consensus_rule_set,
)
from judging.models import Adjudication, Assignment, Campaign, DisagreementTheme, Label
from judging.reports import read_cache
from rubrics.models import Bug, Dataset, Patch
from sejury_web.audit import audit_events
from sejury_web.models import AuditEvent
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
Theme = DisagreementTheme


def labelled(patch: Patch, *labels: str, notes: tuple[str, ...] = ()) -> Patch:
    """Give ``patch`` one label per annotator ann, bob, cyd…, with optional notes."""
    names = ["ann", "bob", "cyd", "dan", "eve", "fay"]
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
    assert counts.majority == 0
    assert queue.rule == ConsensusRule.UNANIMOUS


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


# The majority rule


@pytest.fixture
def majorities(dataset: Dataset) -> Dataset:
    """The dataset, plus per bug: 2 of 3 (a majority), 3 of 5 (none) and 2 of 2 + UNSURE."""
    for bug in dataset.bugs.all():
        labelled(PatchFactory(bug=bug, key=f"{bug.key}-2of3"), VALID, INVALID, VALID)
        labelled(PatchFactory(bug=bug, key=f"{bug.key}-3of5"), *[INVALID] * 3, *[VALID] * 2)
    return dataset


def test_the_queue_under_the_majority_rule_leaves_out_the_majorities(
    majorities: Dataset,
) -> None:
    unanimous = adjudication_queue(dataset=majorities)
    assert keys(unanimous.waiting) == [
        "B-1-2of3",
        "B-1-3of5",
        "B-1-disputed",
        "B-2-2of3",
        "B-2-3of5",
        "B-2-disputed",
        "B-1-few",
        "B-2-few",
    ]
    consensus_rule_set(dataset=majorities, rule=ConsensusRule.MAJORITY, actor=None)

    queue = adjudication_queue(dataset=majorities)
    assert queue.rule == ConsensusRule.MAJORITY
    assert keys(queue.waiting) == [
        "B-1-3of5",  # 3 of 5 is no two-thirds majority
        "B-1-disputed",
        "B-2-3of5",
        "B-2-disputed",
        "B-1-few",
        "B-2-few",
    ]
    counts = queue.counts
    assert (counts.unanimous, counts.majority, counts.adjudicated) == (2, 2, 0)
    assert (counts.disputed, counts.too_few, counts.waiting) == (4, 2, 6)


def test_an_adjudicated_majority_stays_adjudicated_under_the_majority_rule(
    majorities: Dataset, lead: User
) -> None:
    patch = majorities.patches.get(key="B-1-2of3")
    adjudication_record(patch=patch, label=INVALID, themes=[Theme.OTHER], note="n", actor=lead)
    consensus_rule_set(dataset=majorities, rule=ConsensusRule.MAJORITY, actor=lead)
    queue = adjudication_queue(dataset=majorities)
    assert keys(queue.adjudicated) == ["B-1-2of3"]
    assert queue.adjudicated[0].consensus.consensus == INVALID  # the lead's, not the majority's
    assert (queue.counts.majority, queue.counts.adjudicated) == (1, 1)


def test_the_queue_of_a_campaign_follows_the_campaigns_rule(majorities: Dataset) -> None:
    campaign = Campaign.objects.create(
        dataset=majorities, name="Majority", consensus_rule=ConsensusRule.MAJORITY
    )
    for position, key in enumerate(["B-1-2of3", "B-1-3of5", "B-1-unanimous"], 1):
        Assignment.objects.create(
            campaign=campaign,
            patch=majorities.patches.get(key=key),
            annotator=UserFactory(username="ann"),
            position=position,
        )
    queue = adjudication_queue(dataset=majorities, campaign=campaign)
    assert queue.rule == ConsensusRule.MAJORITY
    assert keys(queue.waiting) == ["B-1-3of5"]
    assert (queue.counts.unanimous, queue.counts.majority) == (1, 1)
    # The dataset keeps its own (unanimous) rule.
    assert "B-1-2of3" in keys(adjudication_queue(dataset=majorities).waiting)
    item = adjudication_item(patch=majorities.patches.get(key="B-1-2of3"), campaign=campaign)
    assert item.consensus.state == State.MAJORITY
    assert adjudication_item(patch=item.patch).consensus.state == State.DISPUTED


# Changing the rule


def test_changing_a_datasets_rule_is_in_the_audit_trail(dataset: Dataset, lead: User) -> None:
    assert consensus_rule_set(dataset=dataset, rule=ConsensusRule.MAJORITY, actor=lead)
    dataset.refresh_from_db()
    assert dataset.consensus_rule == ConsensusRule.MAJORITY
    event = audit_events(dataset).get()
    assert (event.actor, event.action, event.target) == (lead, DATASET_CONSENSUS_RULE, dataset)
    assert event.detail == {"from": "unanimous", "to": "majority"}
    # The same rule again changes nothing and records nothing.
    assert not consensus_rule_set(dataset=dataset, rule="majority", actor=lead)
    assert audit_events(dataset).count() == 1


def test_changing_a_campaigns_rule_leaves_the_datasets(dataset: Dataset, lead: User) -> None:
    campaign = Campaign.objects.create(dataset=dataset, name="C")
    assert consensus_rule_set(
        dataset=dataset, campaign=campaign, rule=ConsensusRule.MAJORITY, actor=lead
    )
    campaign.refresh_from_db()
    dataset.refresh_from_db()
    assert (campaign.consensus_rule, dataset.consensus_rule) == ("majority", "unanimous")
    event = audit_events(campaign).get()
    assert (event.action, event.detail) == (
        CAMPAIGN_CONSENSUS_RULE,
        {"from": "unanimous", "to": "majority"},
    )
    assert not audit_events(dataset).exists()


def test_changing_the_rule_refuses_an_unknown_rule_and_another_datasets_campaign(
    dataset: Dataset, lead: User
) -> None:
    with pytest.raises(AdjudicationError) as refused:
        consensus_rule_set(dataset=dataset, rule="plurality", actor=lead)
    known = ", ".join(ConsensusRule.values)
    assert str(refused.value) == UNKNOWN_RULE.format(rule="plurality", known=known)
    assert refused.value.field == "rule"
    elsewhere = Campaign.objects.create(dataset=DatasetFactory(), name="Other")
    with pytest.raises(AdjudicationError, match=CAMPAIGN_ELSEWHERE[:9]):
        consensus_rule_set(dataset=dataset, campaign=elsewhere, rule="majority", actor=lead)
    dataset.refresh_from_db()
    elsewhere.refresh_from_db()
    assert (dataset.consensus_rule, elsewhere.consensus_rule) == ("unanimous", "unanimous")
    rule_actions = [DATASET_CONSENSUS_RULE, CAMPAIGN_CONSENSUS_RULE]
    assert not AuditEvent.objects.filter(action__in=rule_actions).exists()


# At scale: the queue a window at a time, with each patch's label counts and majority.


def many_waiting(disputes: int, too_few: int) -> Dataset:
    """A dataset with ``disputes`` disputed patches (D-00…) and ``too_few`` patches with one
    decisive label (T-00…), each on a bug of its own."""
    dataset = DatasetFactory(slug="many")
    for n in range(disputes):
        bug = BugFactory(dataset=dataset, key=f"D-{n:02d}")
        labelled(PatchFactory(bug=bug, key=f"D-{n:02d}-p"), VALID, INVALID, VALID)
    for n in range(too_few):
        bug = BugFactory(dataset=dataset, key=f"T-{n:02d}")
        labelled(PatchFactory(bug=bug, key=f"T-{n:02d}-p"), INVALID, UNSURE)
    return dataset


def window_keys(window: QueueWindow) -> list[str]:
    return [item.patch.key for item in window.items]


def test_the_queue_is_read_a_window_at_a_time_in_its_order(lead: User) -> None:
    dataset = many_waiting(disputes=12, too_few=3)
    queue = adjudication_queue_outline(dataset=dataset)
    first = queue_window(queue, size=10)
    assert window_keys(first) == [f"D-{n:02d}-p" for n in range(10)]
    assert (first.first, first.last, first.total, first.before) == (1, 10, 15, None)
    second = queue_window(queue, after=first.after, size=10)
    assert window_keys(second) == ["D-10-p", "D-11-p", "T-00-p", "T-01-p", "T-02-p"]
    assert (second.first, second.last, second.after) == (11, 15, None)
    assert second.before == second.items[0].patch.pk
    back = queue_window(queue, before=second.before, size=10)
    assert window_keys(back) == window_keys(first)
    # Unknown or absent cursors start from the beginning.
    assert window_keys(queue_window(queue, after=10**9, size=10)) == window_keys(first)


def test_the_outline_builds_no_patch_and_a_window_only_its_own() -> None:
    """The outline is every waiting patch's id and place, from plain rows: building a Patch
    and a Bug object for each of 4,000 waiting patches was a fourth of a 10,000-patch
    outline. A window builds its own patches only."""
    dataset = many_waiting(disputes=12, too_few=3)
    read_cache.forget()  # computed here, not kept from another test
    built: list[type] = []

    def count(sender: type, **kwargs: object) -> None:
        built.append(sender)

    for model in (Patch, Bug):
        post_init.connect(count, sender=model, weak=False)
    try:
        outline = adjudication_queue_outline(dataset=dataset)
        assert (len(outline.waiting), built) == (15, [])
        window = queue_window(outline, after=outline.waiting[2], size=10)
    finally:
        for model in (Patch, Bug):
            post_init.disconnect(count, sender=model)
    assert window_keys(window) == [f"D-{n:02d}-p" for n in range(3, 12)] + ["T-00-p"]
    assert built.count(Patch) == 10


def test_the_outline_is_built_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tens of thousands of objects built and kept at scale: no cyclic collection meanwhile
    (``sejury_web.gc_pause``), and the collector on again after."""
    dataset = many_waiting(disputes=2, too_few=1)
    read_cache.forget()
    collecting: list[bool] = []
    consensus = selectors._consensus

    def watched(*args: Any) -> Any:
        collecting.append(gc.isenabled())
        return consensus(*args)

    monkeypatch.setattr(selectors, "_consensus", watched)
    gc.enable()
    assert len(adjudication_queue_outline(dataset=dataset).waiting) == 3
    assert (collecting, gc.isenabled()) == ([False], True)


def test_adjudicating_a_window_skips_none_of_the_next(lead: User) -> None:
    """Page numbers would: the ten adjudicated leave the list, and "page 2" would then be
    the third ten. The next window is the patches after the last one the lead saw."""
    dataset = many_waiting(disputes=25, too_few=0)
    first = queue_window(adjudication_queue_outline(dataset=dataset), size=10)
    for item in first.items:
        adjudication_record(
            patch=item.patch,
            label=VALID,
            themes=[Theme.CORRECTNESS_ASSESSMENT],
            note="",
            actor=lead,
        )
    queue = adjudication_queue_outline(dataset=dataset)
    assert queue.counts.waiting == 15
    second = queue_window(queue, after=first.after, size=10)
    assert window_keys(second) == [f"D-{n:02d}-p" for n in range(10, 20)]
    assert second.first == 1  # the first of the patches still waiting
    assert second.before is None  # nothing waits before it any more
    done = queue_window(queue, adjudicated=True, size=4)
    assert window_keys(done) == [f"D-{n:02d}-p" for n in range(4)]
    assert window_keys(queue_window(queue, adjudicated=True, after=done.after, size=4)) == [
        f"D-{n:02d}-p" for n in range(4, 8)
    ]


def test_each_item_counts_its_labels_and_names_its_majority() -> None:
    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, key="B")
    labelled(PatchFactory(bug=bug, key="B-two-to-one"), VALID, INVALID, INVALID, UNSURE)
    labelled(PatchFactory(bug=bug, key="B-tie"), VALID, INVALID, UNSURE)
    labelled(PatchFactory(bug=bug, key="B-unsure"), UNSURE, UNSURE)
    items = {item.patch.key: item for item in adjudication_queue(dataset=dataset).waiting}
    two_to_one = items["B-two-to-one"]
    assert two_to_one.label_counts == [(VALID, 1), (INVALID, 2), (UNSURE, 1)]
    assert (two_to_one.majority, two_to_one.majority_count, two_to_one.decisive_count) == (
        INVALID,
        2,
        3,
    )
    assert items["B-tie"].majority is None
    assert items["B-tie"].label_counts == [(VALID, 1), (INVALID, 1), (UNSURE, 1)]
    assert (items["B-unsure"].majority, items["B-unsure"].decisive_count) == (None, 0)
