"""How the report reads rated dimensions: the annotators' ratings come with their labels (the
annotation table is read once), and a stored value counts as a rating only when it is a
whole number on the scale, whether the database or Python decodes it."""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judging.annotations.services import annotation_record
from judging.consensus.rules import consensus_rule_for
from judging.dimensions import Dimension
from judging.models import Annotation, Label
from judging.reports.figures import Sampling
from judging.reports.selectors import _judge_ratings, _records, agreement_report
from tests.judging.annotations.test_views import make_annotator
from tests.judging.factories import create_campaign, written_rating_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db
# Per patch, what the first annotator's stored maintainability (1–5) is, and what it reads as.
STORED = [4, "4", 4.0, True, 4.5, 9, {"rating": 4}, None]
READ = [4, 4, 4, None, None, None, None, None]
# The judge's stored ratings: on a wider scale than the humans' (−1 widens it), same rules.
JUDGE_STORED = [3, "3", 2.0, -1, False, 2.5, "three", None]
JUDGE_READ = {0: 3, 1: 3, 2: 2, 3: -1}


def test_ratings_are_read_with_the_labels_and_only_whole_numbers_count(annotator: User) -> None:
    dataset = DatasetFactory(name="Odd ratings", slug="odd-ratings")
    bug = BugFactory(dataset=dataset)
    patches = [PatchFactory(bug=bug, diff=make_diff(new=f"y = {n}")) for n in range(len(STORED))]
    people = [annotator, make_annotator("rater-2")]
    campaign = create_campaign(
        dataset,
        people,
        dimensions=[Dimension("maintainability", 1, 5), Dimension("security", 1, 3)],
    )
    for patch in patches:
        for person in people:
            annotation_record(
                campaign=campaign, annotator=person, patch=patch, label=Label.VALID,
                ratings={"maintainability": 2, "security": 3},
            )  # fmt: skip
    for patch, value in zip(patches, STORED, strict=True):
        ratings = {} if value is None else {"maintainability": value}
        Annotation.objects.filter(patch=patch, annotator=annotator).update(ratings=ratings)

    read = _records(dataset, None, consensus_rule_for(dataset, None))
    maintainability, security = read.ratings
    first = maintainability.annotator == annotator.pk
    expected = [(index, value) for index, value in enumerate(READ) if value is not None]
    read_first = zip(maintainability.patch[first], maintainability.value[first], strict=True)
    assert [(int(patch), int(value)) for patch, value in read_first] == expected
    assert maintainability.value[~first].tolist() == [2] * len(patches)
    assert security.annotator.tolist() == [people[1].pk] * len(patches)  # the first's are gone

    member = "quality@1"
    run = written_rating_run(dataset, member, dict(zip(patches, JUDGE_STORED, strict=True)))
    rated = _judge_ratings([run], ["maintainability", "security"])
    assert rated == {
        run.pk: {
            member: {"maintainability": {patches[i].pk: value for i, value in JUDGE_READ.items()}}
        }
    }
    # One name, or three, read the same (SQLite: one JSON_EXTRACT of every name's path).
    assert _judge_ratings([run], ["maintainability"]) == rated
    assert _judge_ratings([run], ["speed", "maintainability", "security"]) == rated

    with CaptureQueriesContext(connection) as queries:
        report = agreement_report(dataset, runs=[run], sampling=Sampling(resamples=20))
    assert report.dimensions is not None
    assert [d.ratings for d in report.dimensions] == [len(patches) + 3, len(patches)]
    assert report.dimensions[0].judges[0].patches == len(JUDGE_READ)
    labels_read = [q for q in queries if '"judging_annotation"."annotator_id"' in q["sql"]]
    assert len(labels_read) == 1, [q["sql"] for q in labels_read]
