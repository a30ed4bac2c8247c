"""The consensus rules: unanimous labels (UNSURE ignored, two decisive labels at least),
disputed and too-few patches, and a lead's adjudication overriding them."""

import pytest

from judging.consensus.rules import State, dataset_consensus, patch_consensus, unanimous_label
from judging.models import Adjudication, Label
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import DatasetFactory, PatchFactory

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE


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
