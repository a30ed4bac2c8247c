"""The consensus rules: unanimous labels (UNSURE ignored, two decisive labels at least), a
two-thirds majority of at least three under the majority rule, disputed and too-few
patches, a lead's adjudication overriding either rule, and which rule is in force."""

import pytest
from django.db import connection

from judging.consensus.rules import (
    ConsensusRule,
    State,
    consensus_rule_for,
    dataset_consensus,
    dataset_rows_parts,
    majority_label,
    patch_consensus,
    unanimous_label,
)
from judging.models import Adjudication, Campaign, Label
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import DatasetFactory, PatchFactory

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
UNANIMOUS, MAJORITY = ConsensusRule.UNANIMOUS, ConsensusRule.MAJORITY


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([VALID, VALID], VALID),
        ([INVALID, INVALID, INVALID], INVALID),
        ([VALID, VALID, UNSURE], VALID),  # UNSURE is no label
        ([UNSURE, INVALID, UNSURE, INVALID], INVALID),
        ([VALID], None),  # one decisive label is not a consensus
        ([VALID, UNSURE, UNSURE], None),
        ([UNSURE, UNSURE], None),
        ([], None),
        ([VALID, INVALID], None),
        ([VALID, VALID, INVALID], None),  # a majority is not unanimity
    ],
)
def test_unanimous_label(labels: list[str], expected: str | None) -> None:
    assert unanimous_label(labels) == expected


@pytest.mark.parametrize(
    ("labels", "state", "consensus"),
    [
        ({1: VALID, 2: VALID}, State.UNANIMOUS, VALID),
        ({1: INVALID, 2: UNSURE, 3: INVALID}, State.UNANIMOUS, INVALID),
        ({1: VALID, 2: INVALID}, State.DISPUTED, None),
        ({1: VALID, 2: INVALID, 3: UNSURE}, State.DISPUTED, None),
        ({1: VALID}, State.TOO_FEW, None),
        ({1: VALID, 2: UNSURE}, State.TOO_FEW, None),
        ({1: UNSURE, 2: UNSURE}, State.TOO_FEW, None),
        ({}, State.TOO_FEW, None),
    ],
)
def test_patch_consensus_without_adjudication(
    labels: dict[int, str], state: State, consensus: str | None
) -> None:
    result = patch_consensus(7, labels, None)
    assert (result.state, result.consensus) == (state, consensus)
    assert result.is_unanimous is (state == State.UNANIMOUS)
    assert result.labels == labels  # UNSURE kept for display


@pytest.mark.parametrize("labels", [{1: VALID, 2: INVALID}, {1: INVALID}, {1: UNSURE}, {}])
def test_an_adjudication_is_the_consensus_of_a_waiting_patch(labels: dict[int, str]) -> None:
    result = patch_consensus(7, labels, INVALID)
    assert (result.state, result.consensus) == (State.ADJUDICATED, INVALID)
    assert not result.is_unanimous  # B_full, not B_clear


def test_an_adjudication_overrides_labels_that_became_unanimous() -> None:
    # Labels changed after the lead decided: the lead's label stays the consensus.
    agreeing = patch_consensus(7, {1: VALID, 2: VALID}, VALID)
    assert (agreeing.state, agreeing.consensus, agreeing.is_unanimous) == (
        State.ADJUDICATED,
        VALID,
        True,
    )
    overruled = patch_consensus(7, {1: VALID, 2: VALID}, INVALID)
    assert (overruled.consensus, overruled.is_unanimous) == (INVALID, False)


@pytest.mark.django_db
def test_dataset_consensus_reads_labels_and_adjudications() -> None:
    dataset = DatasetFactory()
    ann, bob, cyd = (UserFactory(username=name) for name in ("ann", "bob", "cyd"))
    agreed, disputed, lonely, decided, unlabelled = (
        PatchFactory(bug__dataset=dataset) for _ in range(5)
    )
    for patch, labels in (
        (agreed, [VALID, VALID, UNSURE]),
        (disputed, [VALID, INVALID]),
        (lonely, [INVALID]),
        (decided, [VALID, INVALID]),
    ):
        for user, label in zip((ann, bob, cyd), labels, strict=False):
            AnnotationFactory(patch=patch, annotator=user, label=label)
    Adjudication.objects.create(patch=decided, label=VALID, themes=["rubric_ambiguity"])
    other = PatchFactory()  # another dataset's label is not this dataset's
    AnnotationFactory(patch=other, annotator=ann, label=VALID)

    consensus = dataset_consensus(dataset)

    assert list(consensus) == sorted([agreed.pk, disputed.pk, lonely.pk, decided.pk])
    assert unlabelled.pk not in consensus
    assert consensus[agreed.pk].state == State.UNANIMOUS
    assert consensus[agreed.pk].consensus == VALID
    assert consensus[agreed.pk].labels == {ann.pk: VALID, bob.pk: VALID, cyd.pk: UNSURE}
    assert consensus[disputed.pk].state == State.DISPUTED
    assert consensus[lonely.pk].state == State.TOO_FEW
    assert (consensus[decided.pk].state, consensus[decided.pk].consensus) == (
        State.ADJUDICATED,
        VALID,
    )
    only = dataset_consensus(dataset, patch_ids=[disputed.pk, unlabelled.pk])
    assert list(only) == [disputed.pk]


@pytest.mark.django_db
def test_an_adjudicated_patch_without_labels_has_a_consensus() -> None:
    patch = PatchFactory()
    Adjudication.objects.create(patch=patch, label=INVALID)
    result = dataset_consensus(patch.dataset)[patch.pk]
    assert (result.state, result.consensus, result.labels) == (State.ADJUDICATED, INVALID, {})


# The majority rule


def given(*labels: str) -> dict[int, str]:
    """Labels by annotator ids 1, 2, …"""
    return dict(enumerate(labels, start=1))


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([VALID, VALID, INVALID], VALID),  # 2 of 3
        ([INVALID, VALID, INVALID, INVALID], INVALID),  # 3 of 4
        ([VALID] * 4 + [INVALID] * 2, VALID),  # 4 of 6
        ([VALID, VALID, VALID], VALID),  # unanimity of three is a majority too
        ([VALID] * 3 + [INVALID] * 2, None),  # 3 of 5 < 2/3
        ([VALID, VALID, INVALID, INVALID], None),
        ([VALID, VALID], None),  # fewer than three decisive labels
        ([VALID, INVALID, UNSURE], None),
        ([VALID, VALID, UNSURE], None),  # UNSURE is no label: two decisive
        ([VALID, VALID, INVALID, UNSURE, UNSURE, UNSURE], VALID),  # 2 of 3 decisive
        ([VALID, VALID, UNSURE, INVALID, INVALID], None),  # 2 of 4 decisive
        ([], None),
    ],
)
def test_majority_label(labels: list[str], expected: str | None) -> None:
    assert majority_label(labels) == expected


@pytest.mark.parametrize(
    ("labels", "state", "consensus"),
    [
        (given(VALID, VALID, INVALID), State.MAJORITY, VALID),
        (given(INVALID, INVALID, INVALID, VALID), State.MAJORITY, INVALID),
        (given(*[VALID] * 4, *[INVALID] * 2), State.MAJORITY, VALID),
        (given(*[VALID] * 3, *[INVALID] * 2), State.DISPUTED, None),  # 3 of 5 waits
        (given(VALID, INVALID, UNSURE), State.DISPUTED, None),  # 1 of 2 decisive waits
        (given(VALID, VALID, UNSURE), State.UNANIMOUS, VALID),  # 2 of 2: unanimous
        (given(VALID, VALID), State.UNANIMOUS, VALID),
        (given(INVALID, INVALID, INVALID), State.UNANIMOUS, INVALID),  # unanimity first
        (given(VALID, UNSURE, UNSURE), State.TOO_FEW, None),
        (given(UNSURE, UNSURE, UNSURE), State.TOO_FEW, None),  # UNSURE never counts
        (given(VALID, VALID, INVALID, UNSURE, UNSURE), State.MAJORITY, VALID),
        ({}, State.TOO_FEW, None),
    ],
)
def test_patch_consensus_under_the_majority_rule(
    labels: dict[int, str], state: State, consensus: str | None
) -> None:
    result = patch_consensus(7, labels, None, MAJORITY)
    assert (result.state, result.consensus) == (state, consensus)
    # B_clear stays "unanimous labels", whatever the rule.
    assert result.is_unanimous is (state == State.UNANIMOUS)


@pytest.mark.parametrize(
    "labels", [given(VALID, VALID, INVALID), given(*[VALID] * 4, *[INVALID] * 2)]
)
def test_a_majority_is_no_consensus_under_the_unanimous_rule(labels: dict[int, str]) -> None:
    assert patch_consensus(7, labels, None).state == State.DISPUTED
    assert patch_consensus(7, labels, None, UNANIMOUS).state == State.DISPUTED
    assert patch_consensus(7, labels, None, MAJORITY).state == State.MAJORITY


@pytest.mark.parametrize("rule", [UNANIMOUS, MAJORITY])
@pytest.mark.parametrize(
    "labels", [given(VALID, VALID, INVALID), given(VALID, VALID), given(VALID, INVALID), {}]
)
def test_an_adjudication_wins_under_either_rule(
    rule: ConsensusRule, labels: dict[int, str]
) -> None:
    result = patch_consensus(7, labels, INVALID, rule)
    assert (result.state, result.consensus) == (State.ADJUDICATED, INVALID)


def test_a_majority_overruled_by_a_lead_is_not_in_b_clear() -> None:
    agreeing = patch_consensus(7, given(VALID, VALID, INVALID), VALID, MAJORITY)
    assert (agreeing.state, agreeing.is_unanimous) == (State.ADJUDICATED, False)


@pytest.mark.django_db
def test_the_rule_in_force_is_the_campaigns_else_the_datasets() -> None:
    dataset = DatasetFactory()
    assert consensus_rule_for(dataset, None) == UNANIMOUS  # the default
    campaign = Campaign.objects.create(dataset=dataset, name="C", consensus_rule=MAJORITY)
    assert consensus_rule_for(dataset, campaign) == MAJORITY
    dataset.consensus_rule = MAJORITY
    campaign.consensus_rule = UNANIMOUS
    assert consensus_rule_for(dataset, None) == MAJORITY
    assert consensus_rule_for(dataset, campaign) == UNANIMOUS
    assert isinstance(consensus_rule_for(dataset, campaign), ConsensusRule)


@pytest.mark.django_db
def test_dataset_consensus_uses_the_datasets_rule_unless_given_one() -> None:
    dataset = DatasetFactory()
    two_of_three = PatchFactory(bug__dataset=dataset)
    for name, label in zip(("ann", "bob", "cyd"), (VALID, INVALID, VALID), strict=True):
        AnnotationFactory(patch=two_of_three, annotator=UserFactory(username=name), label=label)

    assert dataset_consensus(dataset)[two_of_three.pk].state == State.DISPUTED
    majority = dataset_consensus(dataset, rule=MAJORITY)[two_of_three.pk]
    assert (majority.state, majority.consensus, majority.is_unanimous) == (
        State.MAJORITY,
        VALID,
        False,
    )
    dataset.consensus_rule = MAJORITY
    assert dataset_consensus(dataset)[two_of_three.pk].state == State.MAJORITY
    assert dataset_consensus(dataset, rule=UNANIMOUS)[two_of_three.pk].state == State.DISPUTED


@pytest.mark.django_db
def test_the_rows_version_reads_the_newest_changes_from_indexes_alone() -> None:
    """What every report section and adjudication queue request asks first, the newest
    label, patch and bug change of the dataset, is read from an index on (patch or dataset,
    date): SQLite's plan says so (without those indexes it reads every row)."""
    if connection.vendor != "sqlite":
        pytest.skip("the plan is SQLite's")
    dataset = DatasetFactory()
    parts = dataset_rows_parts(dataset)
    plan = []
    with connection.cursor() as cursor:
        for part in parts:
            sql, params = part.query.sql_with_params()
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan += [row[-1] for row in cursor.fetchall()]
    for index in ("annotation_patch_updated", "patch_dataset_updated", "bug_dataset_updated"):
        assert any(f"COVERING INDEX {index}" in step for step in plan), (index, plan)
