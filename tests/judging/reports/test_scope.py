"""The report's read as arrays (``Scope.of_columns``, no object per patch or label) against
the consensus of ``judging.consensus.rules``, patch by patch."""

import itertools

import numpy as np
import pytest

from judging.consensus.rules import dataset_consensus, patch_consensus
from judging.models import Adjudication, Annotation, Label
from judging.reports.figures import PatchRecord, Sampling
from judging.reports.resampling import Replicates
from judging.reports.scope import (
    INVALID,
    NO_CONSENSUS,
    VALID,
    Scope,
    consensus_columns,
)
from judging.reports.selectors import _inputs
from rubrics.models import ConsensusRule
from tests.judging.reports.factories import Small, add_patches

V, I, U = Label.VALID.value, Label.INVALID.value, Label.UNSURE.value  # noqa: E741
CODE = {None: NO_CONSENSUS, V: VALID, I: INVALID}


@pytest.mark.parametrize("rule", list(ConsensusRule))
def test_consensus_columns_give_patch_consensus_for_every_count(rule: ConsensusRule) -> None:
    cases = list(itertools.product(range(7), range(7), range(3), (None, V, I)))
    expected = []
    for valid, invalid, unsure, adjudicated in cases:
        labels = dict(enumerate([V] * valid + [I] * invalid + [U] * unsure))
        found = patch_consensus(0, labels, adjudicated, rule)
        expected.append((CODE[found.consensus], found.is_unanimous))
    consensus, unanimous = consensus_columns(
        np.array([case[0] for case in cases]),
        np.array([case[1] for case in cases]),
        np.array([CODE[case[3]] for case in cases], np.int8),
        rule,
    )
    assert list(zip(consensus.tolist(), unanimous.tolist(), strict=True)) == expected


def _records_scope(small: Small, patch_ids: set[int] | None, rule: ConsensusRule) -> Scope:
    """The scope the report built before its read became arrays: a record per patch."""
    facts = {
        patch.pk: patch
        for patch in small.dataset.patches.select_related("bug")
        if patch_ids is None or patch.pk in patch_ids
    }
    records = [
        PatchRecord(
            patch_id=pk,
            bug_id=facts[pk].bug_id,
            bug_type=facts[pk].bug.bug_type,
            source=facts[pk].source,
            labels=found.labels,
            decisive=found.decisive,
            consensus=found.consensus,
            unanimous=found.is_unanimous,
        )
        for pk, found in dataset_consensus(small.dataset, rule=rule).items()
        if pk in facts
    ]
    return Scope(records, Replicates.draw(len(records), Sampling(resamples=20)))


@pytest.mark.parametrize("rule", list(ConsensusRule))
@pytest.mark.parametrize("in_campaign", [False, True])
def test_the_reports_read_is_the_scope_of_its_records(
    small: Small, rule: ConsensusRule, in_campaign: bool
) -> None:
    add_patches(small, 7)
    # An adjudicated patch without a label, and one outside the campaign.
    lone, extra = small.patches["P6"], small.patches["P7"]
    Annotation.objects.filter(patch=lone).delete()
    Adjudication.objects.create(patch=lone, label=V)
    # A campaign's patches, as the report reads them: every patch but one.
    patch_ids = None
    if in_campaign:
        patch_ids = set(small.dataset.patches.values_list("pk", flat=True)) - {extra.pk}
    sampling = Sampling(resamples=20)
    read = _inputs(small.dataset, patch_ids, rule, sampling).scope
    expected = _records_scope(small, patch_ids, rule)
    assert lone.pk in read.patch_ids.tolist()
    assert (extra.pk in read.patch_ids.tolist()) is not in_campaign
    for name in (
        "patch_ids", "bug_ids", "consensus", "unanimous", "label_patch", "label_annotator",
        "label_code", "annotators", "labelled", "with_consensus", "valid", "invalid",
    ):  # fmt: skip
        assert np.array_equal(getattr(read, name), getattr(expected, name)), name
    assert read.groups == expected.groups
