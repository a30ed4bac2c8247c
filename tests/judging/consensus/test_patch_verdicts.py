"""The judge beside the humans on one patch: the patch page sets every judging run's verdict
(team verdict, score, members, margin) beside the consensus and, for leads, the labels; the
verdict page shows the consensus, the labels and whether the judge agrees. Both pages read in
a fixed number of queries however many runs judged the patch and however large the dataset."""

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judging.consensus.selectors import JudgeAgreement, judge_agreement, patches_consensus
from judging.models import Adjudication, Annotation, JudgingRun, Label, PatchJudgment
from rubrics.models import Patch
from tests.judging.factories import AnnotationFactory, UserFactory, bug_with_patches, finished_run
from tests.rubrics.factories import make_diff

pytestmark = pytest.mark.django_db

TEAM = ["s3", "rubric"]


def _members(s3: float, rubric: str) -> dict[str, dict[str, object]]:
    return {
        "s3": {"score": s3},
        "rubric": {"score": 100.0 if rubric == "VALID" else 0.0, "verdict": rubric},
    }


def _text(html: str) -> str:
    """The page's text, tags dropped and spaces squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _section(html: str, section_id: str) -> str:
    found = re.search(rf'<section[^>]*id="{section_id}".*?</section>', html, re.S)
    assert found, f"no section #{section_id}"
    return found.group(0)


@pytest.fixture
def judged() -> tuple[Patch, JudgingRun, JudgingRun]:
    """A patch two annotators call VALID, judged VALID by one run and INVALID by another."""
    bug = bug_with_patches(2)
    patch = bug.patches.get(key=f"{bug.key}-0")
    AnnotationFactory(patch=patch, annotator=UserFactory(username="ann-alice"), note="fixes it")
    AnnotationFactory(patch=patch, annotator=UserFactory(username="ann-bob"), note="same as ref")
    agrees = finished_run(
        bug.dataset, {patch: ("VALID", _members(80.0, "VALID"))}, team=TEAM, name="agreeing run"
    )
    disagrees = finished_run(
        bug.dataset, {patch: ("INVALID", _members(10.0, "INVALID"))}, team=TEAM, name="other run"
    )
    return patch, agrees, disagrees


def test_the_patch_page_sets_each_runs_verdict_beside_the_consensus_and_the_labels(
    judged: tuple[Patch, JudgingRun, JudgingRun], lead_client: Client
) -> None:
    patch, agrees, disagrees = judged
    html = lead_client.get(patch.get_absolute_url()).content.decode()
    card = _section(html, "judge-humans")
    text = _text(card)
    assert "Human consensus: VALID" in text
    assert "unanimous" in text
    assert "1 of 2 verdicts agree with it" in text
    rows = re.findall(r'<tr data-run="(\d+)">(.*?)</tr>', card, re.S)
    # Newest run first, each with its verdict page, score, margin, members and agreement.
    assert [int(run_id) for run_id, _ in rows] == [disagrees.pk, agrees.pk]
    other_row, agreeing_row = (_text(row) for _, row in rows)
    assert "agreeing run VALID 100.00" in agreeing_row
    assert "0.50" in agreeing_row  # |100 − 50| / 100
    assert "s3 80 · rubric 100 VALID" in agreeing_row
    assert "agrees with the consensus" in agreeing_row
    assert "other run INVALID 0.00" in other_row
    assert "s3 10 · rubric 0 INVALID" in other_row
    assert "disagrees with the consensus" in other_row
    judgment = PatchJudgment.objects.get(run=agrees, patch=patch)
    assert f'href="{judgment.get_absolute_url()}"' in card
    assert f'href="{agrees.get_absolute_url()}"' in card
    labels = _text(_section(html, "labels"))
    assert "ann-alice VALID fixes it" in labels
    assert "ann-bob VALID same as ref" in labels


def test_a_reviewer_sees_the_verdicts_and_the_consensus_but_not_who_labelled_what(
    judged: tuple[Patch, JudgingRun, JudgingRun], reviewer_client: Client
) -> None:
    patch, agrees, _ = judged
    html = reviewer_client.get(patch.get_absolute_url()).content.decode()
    text = _text(_section(html, "judge-humans"))
    assert "Human consensus: VALID" in text
    assert "agrees with the consensus" in text
    assert "ann-alice" not in html
    assert "fixes it" not in html
    assert 'id="labels"' not in html
    # The run and verdict pages are the leads': no link a reviewer would be refused at.
    assert agrees.get_absolute_url() not in html
    assert "/verdicts/" not in html


def test_the_patch_page_says_when_nobody_labelled_or_judged_the_patch(
    lead_client: Client,
) -> None:
    patch = bug_with_patches(1).patches.get()
    text = _text(
        _section(lead_client.get(patch.get_absolute_url()).content.decode(), "judge-humans")
    )
    assert "Human consensus: none yet no label yet" in text
    assert "No judging run has judged this patch yet." in text


def test_the_verdict_page_shows_the_consensus_the_labels_and_whether_the_judge_agrees(
    judged: tuple[Patch, JudgingRun, JudgingRun], lead_client: Client
) -> None:
    patch, agrees, disagrees = judged
    for run, said in (
        (agrees, "agrees with the consensus"),
        (disagrees, "disagrees with the consensus"),
    ):
        judgment = PatchJudgment.objects.get(run=run, patch=patch)
        html = lead_client.get(judgment.get_absolute_url()).content.decode()
        text = _text(_section(html, "humans"))
        assert "Human consensus: VALID unanimous" in text
        assert f"The team’s verdict {said}" in text
        assert "ann-alice VALID fixes it Given in the app" in text
    # A third annotator says INVALID: disputed, no consensus until a lead adjudicates.
    AnnotationFactory(patch=patch, annotator=UserFactory(username="ann-carol"), label=Label.INVALID)
    judgment = PatchJudgment.objects.get(run=disagrees, patch=patch)
    text = _text(_section(lead_client.get(judgment.get_absolute_url()).content.decode(), "humans"))
    assert "Human consensus: none yet annotators disagree: waits for a lead" in text
    assert "The team’s verdict no consensus yet" in text
    Adjudication.objects.create(patch=patch, label=Label.INVALID)
    text = _text(_section(lead_client.get(judgment.get_absolute_url()).content.decode(), "humans"))
    assert "Human consensus: INVALID adjudicated by a lead" in text
    assert "The team’s verdict agrees with the consensus" in text


def test_judge_agreement() -> None:
    patch = bug_with_patches(1).patches.get()
    consensus = patches_consensus(dataset=patch.dataset, patch_ids=[patch.pk])
    assert consensus[patch.pk].consensus is None  # asked for, though nobody labelled it
    assert judge_agreement("VALID", consensus[patch.pk]) == JudgeAgreement.NO_CONSENSUS
    assert judge_agreement("", consensus[patch.pk]) == JudgeAgreement.NO_VERDICT


def _grow(patch: Patch, *, runs: int, patches: int, annotators: list[User]) -> None:
    """Up to ``runs`` runs judging ``patch``, and the dataset grown to ``patches`` patches, each
    labelled by two annotators and judged by every run."""
    dataset, bug = patch.dataset, patch.bug
    for _ in range(JudgingRun.objects.filter(dataset=dataset).count(), runs):
        finished_run(dataset, {patch: ("INVALID", _members(5.0, "INVALID"))}, team=TEAM)
    Patch.objects.bulk_create(
        Patch(
            bug=bug, dataset=dataset, key=f"grown-{number}",
            diff=make_diff(new=f"x = {number + 100}"), diff_hash=f"h{number}", source="agent-b",
        )
        for number in range(dataset.patches.count(), patches)
    )  # fmt: skip
    unlabelled = dataset.patches.exclude(pk=patch.pk).exclude(annotations__isnull=False)
    Annotation.objects.bulk_create(
        Annotation(patch=p, annotator=a, label=Label.INVALID)
        for p in unlabelled
        for a in annotators
    )
    for run in JudgingRun.objects.filter(dataset=dataset):
        PatchJudgment.objects.bulk_create(
            PatchJudgment(run=run, patch=p, status="done", verdict="INVALID", score=0.0)
            for p in dataset.patches.exclude(judgments__run=run)
        )


def test_both_pages_read_in_a_fixed_number_of_queries(
    judged: tuple[Patch, JudgingRun, JudgingRun], lead_client: Client
) -> None:
    patch, agrees, _ = judged
    annotators = list(User.objects.filter(username__in=["ann-alice", "ann-bob"]))
    verdict_url = PatchJudgment.objects.get(run=agrees, patch=patch).get_absolute_url()

    def queries() -> tuple[int, int]:
        counts = []
        for url in (patch.get_absolute_url(), verdict_url):
            lead_client.get(url)  # warm: Django keeps content types once read
            with CaptureQueriesContext(connection) as captured:
                assert lead_client.get(url).status_code == 200
            counts.append(len(captured))
        return counts[0], counts[1]

    _grow(patch, runs=2, patches=10, annotators=annotators)
    small = queries()
    _grow(patch, runs=6, patches=1000, annotators=annotators)
    assert Patch.objects.filter(dataset=patch.dataset).count() == 1000
    assert JudgingRun.objects.filter(dataset=patch.dataset).count() == 6
    html = lead_client.get(patch.get_absolute_url()).content.decode()
    assert len(re.findall(r'<tr data-run="', html)) == 6
    assert queries() == small
