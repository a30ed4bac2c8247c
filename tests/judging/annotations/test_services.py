"""Campaign services and selectors: balanced assignments, patch selection, validation, labels
with their history, closing, and imported labels counting like labels given in the app."""

import itertools
import math
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judging.annotations import selectors
from judging.annotations.bundle import UNKNOWN_LABEL
from judging.annotations.services import (
    ALREADY_CLOSED,
    BAD_OVERLAP,
    BAD_SAMPLE_SIZE,
    CAMPAIGN_CLOSED,
    EMPTY_FILTER,
    FILTERS_WITH_ALL,
    LABEL_FINAL,
    MAX_SECONDS_PER_LABEL,
    NO_ANNOTATORS,
    NO_PATCHES,
    NO_SAMPLE_SIZE,
    NOT_ANNOTATORS,
    NOT_ASSIGNED,
    SAMPLE_TOO_LARGE,
    UNKNOWN_FILTER,
    CampaignError,
    annotation_record,
    balanced_assignments,
    campaign_close,
    campaign_reopen,
)
from judging.consensus.rules import UNKNOWN_RULE, ConsensusRule
from judging.models import Annotation, AnnotationRevision, Assignment, Campaign
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset, Patch
from rubrics.selectors import UNKNOWN_PATCHES
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.judging.factories import AnnotationFactory, create_campaign
from tests.rubrics.bundles import bug, label, patch, source
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db


def annotators(count: int, prefix: str = "rater") -> list[User]:
    return [
        user_create(actor=None, username=f"{prefix}-{n}", password=None, roles=[Role.ANNOTATOR])
        for n in range(count)
    ]


def dataset_of(count: int, **fields: Any) -> Dataset:
    """A dataset of ``count`` patches P-00, P-01, … over bugs of two patches each."""
    dataset = DatasetFactory()
    for n in range(count):
        if n % 2 == 0:
            bug_ = BugFactory(dataset=dataset, key=f"B-{n // 2:02d}", **fields)
        PatchFactory(bug=bug_, key=f"P-{n:02d}")
    return dataset


def queues_of(campaign: Campaign) -> dict[int, list[int]]:
    queues: dict[int, list[int]] = {}
    for a in Assignment.objects.filter(campaign=campaign).order_by("annotator_id", "position"):
        queues.setdefault(a.annotator_id, []).append(a.patch_id)
    return queues


def check_balanced(queues: dict[int, list[int]], patch_ids: list[int], overlap: int) -> None:
    per_patch: dict[int, list[int]] = {}
    for annotator, queue in queues.items():
        assert len(queue) == len(set(queue)), "a patch twice in one queue"
        for patch_id in queue:
            per_patch.setdefault(patch_id, []).append(annotator)
    assert sorted(per_patch) == sorted(patch_ids)
    assert all(len(set(people)) == overlap for people in per_patch.values())
    loads = [len(queue) for queue in queues.values()]
    assert max(loads) - min(loads) <= 1
    assert sum(loads) == len(patch_ids) * overlap


# Balance, as a property over many sizes.


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1])
def test_every_patch_gets_k_distinct_annotators_and_loads_differ_by_at_most_one(seed: int) -> None:
    for patches, people in itertools.product([1, 2, 3, 5, 7, 10, 23, 50], [1, 2, 3, 4, 5, 7]):
        for overlap in range(1, people + 1):
            patch_ids = list(range(100, 100 + patches))
            queues = balanced_assignments(
                patch_ids, list(range(1, people + 1)), overlap=overlap, seed=seed
            )
            check_balanced(queues, patch_ids, overlap)
            again = balanced_assignments(
                patch_ids, list(range(1, people + 1)), overlap=overlap, seed=seed
            )
            assert again == queues  # deterministic for a seed


def test_queues_are_ordered_differently_for_each_annotator() -> None:
    queues = balanced_assignments(list(range(20)), [1, 2, 3], overlap=3, seed=11)
    assert all(sorted(queue) == list(range(20)) for queue in queues.values())
    assert len({tuple(queue) for queue in queues.values()}) == 3


def test_pairs_of_annotators_vary_when_k_is_less_than_the_annotators() -> None:
    queues = balanced_assignments(list(range(30)), [1, 2, 3], overlap=2, seed=3)
    pairs = Counter(
        tuple(sorted(a for a, queue in queues.items() if patch_id in queue))
        for patch_id in range(30)
    )
    assert pairs == {(1, 2): 10, (1, 3): 10, (2, 3): 10}


@pytest.mark.parametrize(("patches", "people", "overlap"), [(9, 3, 2), (10, 4, 3), (5, 5, 1)])
def test_campaign_create_writes_balanced_assignments_in_1_based_queues(
    patches: int, people: int, overlap: int
) -> None:
    dataset = dataset_of(patches)
    campaign = create_campaign(dataset, annotators(people), overlap=overlap)
    queues = queues_of(campaign)
    check_balanced(queues, list(dataset.patches.values_list("pk", flat=True)), overlap)
    for annotator in queues:
        positions = Assignment.objects.filter(campaign=campaign, annotator_id=annotator)
        assert sorted(positions.values_list("position", flat=True)) == list(
            range(1, len(queues[annotator]) + 1)
        )
    assert campaign.annotators.count() == people
    assert campaign.seed is not None  # stored, though nothing was sampled
    assert (campaign.status, campaign.sample_size, campaign.filters) == ("open", None, {})
    assert campaign.consensus_rule == "unanimous"  # paper 004's rule unless the lead says


def test_campaign_create_stores_the_consensus_rule() -> None:
    campaign = create_campaign(dataset_of(2), annotators(2), consensus_rule="majority")
    campaign.refresh_from_db()
    assert campaign.consensus_rule == ConsensusRule.MAJORITY


# Selection


def test_a_sample_is_reproducible_from_its_seed() -> None:
    dataset = dataset_of(40)
    people = annotators(2)

    def sampled(seed: int) -> set[int]:
        campaign = create_campaign(dataset, people, selection="sample", sample_size=10, seed=seed)
        return {a.patch_id for a in campaign.assignments.all()}

    first = sampled(5)
    assert len(first) == 10
    assert sampled(5) == first
    assert sampled(6) != first
    campaign = Campaign.objects.filter(seed=5).first()
    assert campaign is not None
    assert (campaign.selection, campaign.sample_size) == ("sample", 10)
    # The queues too: the same seed orders them the same way.
    same = [queues_of(c) for c in Campaign.objects.filter(seed=5)]
    assert list(same[0].values()) == list(same[1].values())


def test_a_calibration_sample_has_20_patches_by_default_and_a_random_stored_seed() -> None:
    dataset = dataset_of(30)
    campaign = create_campaign(dataset, annotators(2), purpose="calibration", selection="sample")
    assert campaign.sample_size == 20
    assert campaign.seed is not None
    assert campaign.assignments.values("patch").distinct().count() == 20
    small = create_campaign(
        dataset_of(6), annotators(2, "small"), purpose="calibration", selection="sample"
    )
    assert small.sample_size == 6  # the default never asks for more than there is


def test_filters_narrow_the_patches() -> None:
    dataset = DatasetFactory()
    typed = BugFactory(dataset=dataset, bug_type="null_deref")
    other = BugFactory(dataset=dataset, bug_type="overflow")
    a = PatchFactory(bug=typed, key="A", source="tool-x", tests_pass=True)
    b = PatchFactory(bug=typed, key="B", source="tool-y", tests_pass=False)
    c = PatchFactory(bug=other, key="C", source="tool-x", tests_pass=None)
    people = annotators(2)

    def selected(**filters: Any) -> set[Patch]:
        campaign = create_campaign(dataset, people, selection="filter", filters=filters)
        return {assignment.patch for assignment in campaign.assignments.all()}

    assert selected(bug_type="null_deref") == {a, b}
    assert selected(source="tool-x") == {a, c}
    assert selected(tests_pass=True) == {a}
    assert selected(tests_pass=False) == {b}
    assert selected(tests_pass=None) == {c}
    assert selected(patches=["C", "B", "C"]) == {b, c}
    assert selected(bug_type="null_deref", source="tool-x") == {a}
    campaign = create_campaign(
        dataset, people, selection="sample", sample_size=1, filters={"source": "tool-y"}
    )
    assert {x.patch for x in campaign.assignments.all()} == {b}
    assert campaign.filters == {"source": "tool-y"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"overlap": 0}, BAD_OVERLAP.format(count=3)),
        ({"overlap": 4}, BAD_OVERLAP.format(count=3)),
        ({"selection": "sample", "sample_size": 11}, SAMPLE_TOO_LARGE.format(size=11, count=10)),
        ({"selection": "sample", "sample_size": 0}, BAD_SAMPLE_SIZE),
        ({"selection": "sample"}, NO_SAMPLE_SIZE),
        ({"filters": {"source": "x"}}, FILTERS_WITH_ALL),
        ({"selection": "filter"}, EMPTY_FILTER),
        ({"selection": "filter", "filters": {"colour": "red"}}, UNKNOWN_FILTER[:14]),
        ({"selection": "filter", "filters": {"source": "nobody"}}, NO_PATCHES[:22]),
        ({"selection": "filter", "filters": {"patches": ["P-00", "nope"]}}, UNKNOWN_PATCHES[:9]),
        ({"annotators": []}, NO_ANNOTATORS),
        ({"purpose": "fun"}, "unknown purpose 'fun'"),
        ({"selection": "some"}, "unknown selection 'some'"),
        (
            {"consensus_rule": "plurality"},
            UNKNOWN_RULE.format(rule="plurality", known=", ".join(ConsensusRule.values)),
        ),
        ({"name": "  "}, "a campaign needs a name"),
    ],
)
def test_campaign_create_refuses_what_cannot_be_done(fields: dict[str, Any], message: str) -> None:
    dataset = dataset_of(10)
    with pytest.raises(CampaignError, match=message.replace("(", r"\(").replace(")", r"\)")):
        create_campaign(dataset, annotators(3), **fields)
    assert not Campaign.objects.exists()
    assert not Assignment.objects.exists()


def test_annotators_must_hold_the_annotator_role_and_a_dataset_needs_patches(
    lead: User, reviewer: User
) -> None:
    dataset = dataset_of(4)
    with pytest.raises(CampaignError) as excinfo:
        create_campaign(dataset, [*annotators(1), lead, reviewer], overlap=1)
    assert str(excinfo.value) == NOT_ANNOTATORS.format(names="lead, reviewer")
    with pytest.raises(CampaignError, match="holds no patch"):
        create_campaign(DatasetFactory(), annotators(2, "other"))
    assert not Campaign.objects.exists()


# Labels


@pytest.fixture
def campaign() -> Campaign:
    """Four patches, two annotators, each labelling every patch."""
    return create_campaign(dataset_of(4), annotators(2), overlap=2)


def first_patch(campaign: Campaign, user: User) -> Patch:
    return Assignment.objects.get(campaign=campaign, annotator=user, position=1).patch


def test_annotation_record_creates_then_changes_one_label_and_keeps_its_history(
    campaign: Campaign,
) -> None:
    rater = campaign.annotators.order_by("username")[0]
    target = first_patch(campaign, rater)
    annotation_record(
        campaign=campaign, annotator=rater, patch=target, label="VALID", note="", seconds_spent=30
    )
    annotation = annotation_record(
        campaign=campaign,
        annotator=rater,
        patch=target,
        label="INVALID",
        note=" misses the null check ",
        seconds_spent=12.5,
    )
    annotation = Annotation.objects.get(pk=annotation.pk)
    assert (annotation.label, annotation.note, annotation.origin, annotation.campaign) == (
        "INVALID",
        "misses the null check",
        Annotation.Origin.UI,
        campaign,
    )
    assert annotation.seconds_spent == 42.5
    history = list(annotation.revisions.values_list("label", "note", "campaign", "seconds_spent"))
    assert history == [
        ("VALID", "", campaign.pk, 30.0),
        ("INVALID", "misses the null check", campaign.pk, 12.5),
    ]
    assert Annotation.objects.count() == 1


@pytest.mark.parametrize(
    ("given", "kept"),
    [(10_000_000, MAX_SECONDS_PER_LABEL), (-5, 0.0), (math.nan, 0.0), (math.inf, 0.0), (None, 0.0)],
)
def test_the_time_on_a_page_is_clamped(campaign: Campaign, given: Any, kept: float) -> None:
    rater = campaign.annotators.first()
    assert rater is not None
    annotation = annotation_record(
        campaign=campaign,
        annotator=rater,
        patch=first_patch(campaign, rater),
        label="UNSURE",
        seconds_spent=given,
    )
    assert annotation.seconds_spent == kept


def test_the_same_label_again_records_nothing(campaign: Campaign) -> None:
    """A double click, a second tab or a replayed form: no history row, no time twice; a
    changed note or label is recorded."""
    rater = campaign.annotators.order_by("username")[0]
    target = first_patch(campaign, rater)
    given = {"campaign": campaign, "annotator": rater, "patch": target}
    first = annotation_record(**given, label="VALID", note="fine", seconds_spent=30)
    updated_at = Annotation.objects.get(pk=first.pk).updated_at
    for seconds in (30, 5):
        annotation_record(**given, label="VALID", note=" fine ", seconds_spent=seconds)
    annotation = Annotation.objects.get(pk=first.pk)
    assert (annotation.seconds_spent, annotation.updated_at) == (30.0, updated_at)
    assert annotation.revisions.count() == 1
    annotation_record(**given, label="VALID", note="fine, on a second look", seconds_spent=8)
    annotation_record(**given, label="INVALID", note="fine, on a second look", seconds_spent=4)
    annotation = Annotation.objects.get(pk=first.pk)
    assert annotation.seconds_spent == 42.0
    assert list(annotation.revisions.values_list("label", "seconds_spent")) == [
        ("VALID", 30.0),
        ("VALID", 8.0),
        ("INVALID", 4.0),
    ]


def test_confirming_an_imported_label_in_a_campaign_is_recorded(campaign: Campaign) -> None:
    """The same label, but given in the app now: it becomes the campaign's."""
    rater = campaign.annotators.order_by("username")[0]
    target = first_patch(campaign, rater)
    imported = Annotation.objects.create(
        patch=target, annotator=rater, label="VALID", origin=Annotation.Origin.IMPORTED
    )
    annotation_record(campaign=campaign, annotator=rater, patch=target, label="VALID")
    imported.refresh_from_db()
    assert (imported.origin, imported.campaign) == (Annotation.Origin.UI, campaign)
    assert imported.revisions.count() == 1


def test_a_closed_campaign_refuses_labels_until_it_is_reopened(
    campaign: Campaign, lead: User
) -> None:
    rater = campaign.annotators.first()
    assert rater is not None
    target = first_patch(campaign, rater)
    campaign_close(campaign=campaign, actor=lead)
    assert (campaign.status, campaign.closed_at is not None) == ("closed", True)
    with pytest.raises(CampaignError) as excinfo:
        annotation_record(campaign=campaign, annotator=rater, patch=target, label="VALID")
    assert str(excinfo.value) == CAMPAIGN_CLOSED.format(campaign="Round 1")
    with pytest.raises(CampaignError, match=ALREADY_CLOSED.format(campaign="Round 1")):
        campaign_close(campaign=campaign, actor=lead)
    assert not Annotation.objects.exists()
    campaign_reopen(campaign=campaign, actor=lead)
    assert (campaign.status, campaign.closed_at) == ("open", None)
    annotation_record(campaign=campaign, annotator=rater, patch=target, label="VALID")
    assert Annotation.objects.get().label == "VALID"


def test_of_two_leads_closing_at_once_one_is_told_it_is_closed_already(
    campaign: Campaign, lead: User
) -> None:
    # Two requests each read the open campaign, then close it: the second must not pass.
    seen_by_other = Campaign.objects.get(pk=campaign.pk)
    campaign_close(campaign=campaign, actor=lead)
    closed_at = Campaign.objects.get(pk=campaign.pk).closed_at
    with pytest.raises(CampaignError, match=ALREADY_CLOSED.format(campaign="Round 1")):
        campaign_close(campaign=seen_by_other, actor=lead)
    assert Campaign.objects.get(pk=campaign.pk).closed_at == closed_at
    campaign_reopen(campaign=campaign, actor=lead)
    with pytest.raises(CampaignError):
        campaign_reopen(campaign=seen_by_other, actor=lead)
    assert campaign.get_absolute_url() == f"/campaigns/{campaign.pk}/"


def test_only_assigned_patches_and_known_labels_are_recorded(campaign: Campaign) -> None:
    rater = campaign.annotators.first()
    assert rater is not None
    stranger = annotators(1, "stranger")[0]
    target = first_patch(campaign, rater)
    with pytest.raises(CampaignError) as excinfo:
        annotation_record(campaign=campaign, annotator=stranger, patch=target, label="VALID")
    assert str(excinfo.value) == NOT_ASSIGNED.format(bug=target.bug.key, campaign="Round 1")
    outside = PatchFactory(bug=target.bug, key="elsewhere")
    with pytest.raises(CampaignError, match="not in your queue"):
        annotation_record(campaign=campaign, annotator=rater, patch=outside, label="VALID")
    with pytest.raises(CampaignError, match=UNKNOWN_LABEL[:14]):
        annotation_record(campaign=campaign, annotator=rater, patch=target, label="valid")
    assert not Annotation.objects.exists()


def test_a_label_given_in_a_closed_campaign_is_final_in_another(lead: User) -> None:
    dataset = dataset_of(2)
    people = annotators(1)
    first = create_campaign(dataset, people, overlap=1, name="First")
    second = create_campaign(dataset, people, overlap=1, name="Second")
    target = dataset.patches.first()
    assert target is not None
    annotation_record(campaign=first, annotator=people[0], patch=target, label="VALID")
    campaign_close(campaign=first, actor=lead)
    with pytest.raises(CampaignError) as excinfo:
        annotation_record(campaign=second, annotator=people[0], patch=target, label="INVALID")
    assert str(excinfo.value) == LABEL_FINAL.format(bug=target.bug.key, other="First")
    # Counted as done in the second campaign all the same: one current label per person.
    (row,) = selectors.campaign_progress(second)
    assert (row.progress.assigned, row.progress.done) == (2, 1)


# Imported labels


def test_imported_labels_count_as_done_and_join_the_history() -> None:
    records = (bug("BUG-1"), patch("P-1"), patch("P-2"), label("P-1", "rater-a", "INVALID"))
    summary = bundle_import(source=source(*records), dataset_name="Imported", actor=None)
    rater = User.objects.get(username="rater-a")
    campaign = create_campaign(summary.dataset, [rater], overlap=1)
    (row,) = selectors.campaign_progress(campaign)
    assert (row.progress.assigned, row.progress.done, row.imported) == (2, 1, 1)
    queue = selectors.annotator_queue(campaign=campaign, annotator=rater)
    assert sorted((item.label or "") for item in queue) == ["", "INVALID"]
    imported = Annotation.objects.get()
    assert list(imported.revisions.values_list("label", "campaign")) == [("INVALID", None)]

    # Relabelled in the app, then imported again (overwriting it), then changed, then the
    # same bundle once more: each change is a new value in the history; a no-op adds none.
    annotation_record(campaign=campaign, annotator=rater, patch=imported.patch, label="VALID")
    bundle_import(source=source(*records), dataset_name="Imported", actor=None)
    changed = (*records[:3], label("P-1", "rater-a", "UNSURE", note="not sure now"))
    for _ in range(2):
        bundle_import(source=source(*changed), dataset_name="Imported", actor=None)
    imported.refresh_from_db()
    # The campaign the label was last given in stays: an import does not move it.
    assert (imported.label, imported.origin, imported.campaign) == (
        "UNSURE",
        Annotation.Origin.IMPORTED,
        campaign,
    )
    history = AnnotationRevision.objects.filter(annotation=imported)
    assert list(history.values_list("label", "note", "campaign")) == [
        ("INVALID", "", None),
        ("VALID", "", campaign.pk),
        ("INVALID", "", None),
        ("UNSURE", "not sure now", None),
    ]


# Progress, for the lead and for the annotator


def test_progress_coverage_and_queues_in_few_queries(
    campaign: Campaign, django_assert_max_num_queries: Any
) -> None:
    first, second = campaign.annotators.order_by("username")
    for position, (value, seconds) in enumerate(
        [("VALID", 10), ("UNSURE", 30), ("INVALID", 0)], start=1
    ):
        target = Assignment.objects.get(campaign=campaign, annotator=first, position=position)
        annotation_record(
            campaign=campaign,
            annotator=first,
            patch=target.patch,
            label=value,
            seconds_spent=seconds,
        )
    target = Assignment.objects.get(campaign=campaign, annotator=second, position=4)
    annotation_record(campaign=campaign, annotator=second, patch=target.patch, label="VALID")

    with django_assert_max_num_queries(3):
        rows = selectors.campaign_progress(campaign)
    assert [(r.annotator, r.progress.assigned, r.progress.done, r.unsure) for r in rows] == [
        (first, 4, 3, 1),
        (second, 4, 1, 0),
    ]
    assert rows[0].median_seconds == 20.0  # a label without a measured time is left out
    assert rows[1].median_seconds is None
    assert (rows[0].progress.percent, rows[0].progress.finished) == (75, False)

    with django_assert_max_num_queries(2):
        coverage, histogram = selectors.campaign_coverage(campaign)
    assert [row.patch_key for row in coverage] == ["P-00", "P-01", "P-02", "P-03"]
    assert all([name for name, _ in row.labels] == ["rater-0", "rater-1"] for row in coverage)
    assert sum(histogram.values()) == 4
    assert sum(count * patches for count, patches in histogram.items()) == 4

    with django_assert_max_num_queries(2):
        (listed,) = selectors.campaign_list(dataset=campaign.dataset)
    assert (listed.patches, listed.progress.assigned, listed.progress.done) == (4, 8, 4)
    assert selectors.campaign_list(dataset=DatasetFactory()) == []

    with django_assert_max_num_queries(2):
        queue = selectors.annotator_queue(campaign=campaign, annotator=first)
    assert [(item.position, item.label) for item in queue] == [
        (1, "VALID"),
        (2, "UNSURE"),
        (3, "INVALID"),
        (4, None),
    ]
    assert selectors.next_unlabelled(queue, after=1) == queue[3]
    assert selectors.next_unlabelled(queue, after=4) == queue[3]
    done = [selectors.QueueItem(1, 1, "VALID")]
    assert selectors.next_unlabelled(done, after=0) is None

    with django_assert_max_num_queries(2):
        (mine,) = selectors.annotator_campaigns(annotator=second)
    assert (mine.campaign.pk, mine.progress.assigned, mine.progress.done) == (campaign.pk, 4, 1)
    assert (mine.campaign.name, mine.campaign.dataset_name) == ("Round 1", campaign.dataset.name)
    assert selectors.annotator_campaigns(annotator=annotators(1, "idle")[0]) == []


def test_the_label_counts_of_bugs_and_patches_group_without_the_default_orders_joins() -> None:
    """The dataset and bug pages' label counts: right, and grouped in one query that joins
    only the patch (the default order's join of the dataset stayed in the grouped query)."""
    first, second = PatchFactory(), PatchFactory()
    AnnotationFactory.create_batch(2, patch=first)
    AnnotationFactory(patch=second)
    counts = selectors.LabelCounts()
    with CaptureQueriesContext(connection) as captured:
        assert counts.bug_counts(bug_ids=[first.bug_id, second.bug_id]) == {
            first.bug_id: 2,
            second.bug_id: 1,
        }
        assert counts.patch_counts(patch_ids=[first.pk, second.pk]) == {first.pk: 2, second.pk: 1}
    assert len(captured) == 2
    for query in captured:
        assert "rubrics_dataset" not in query["sql"], query["sql"]
