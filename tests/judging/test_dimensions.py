"""One value type and one line syntax for named dimensions (``judging.dimensions``): what a
campaign asks annotators to rate and what a written judge rates, so the report pairs them."""

import json
import re
from pathlib import Path

import pytest

from judging.annotations.dimensions import campaign_dimensions_parse
from judging.annotations.services import annotation_record
from judging.dimensions import (
    NAME,
    Bounds,
    Dimension,
    DimensionsError,
    dimensions_from_json,
    dimensions_of,
    dimensions_parse,
    dimensions_text,
)
from judging.judges.answers import JUDGE_SCALES, answer_spec
from judging.models import Label
from judging.reports.figures import Sampling
from judging.reports.selectors import agreement_report
from tests.judging.annotations.test_views import make_annotator
from tests.judging.factories import create_campaign, written_rating_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

STARTERS = Path(__file__).resolve().parent.parent.parent / "judging" / "judges" / "starters"


def test_a_line_is_a_name_a_scale_and_an_optional_description() -> None:
    text = (
        "maintainability 1..5 Is it easy to change?\n\n"
        "  security 1-5\n"
        "performance 1–5   No needless   work \n"
        "style 0 ..9"
    )
    assert dimensions_parse(text, JUDGE_SCALES) == [
        Dimension("maintainability", 1, 5, "Is it easy to change?"),
        Dimension("security", 1, 5),
        Dimension("performance", 1, 5, "No needless work"),
        Dimension("style", 0, 9),
    ]
    # The lines a form shows read back as the same dimensions.
    found = dimensions_parse(text, JUDGE_SCALES)
    assert dimensions_parse(dimensions_text(found), JUDGE_SCALES) == found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("maintainability", "line 1: “maintainability” is not a dimension: write its name"),
        ("ok 1..5\nsecurity 1 5 Holes", "line 2: “security 1 5 Holes” is not a dimension"),
        ("ok 1..5\n\nMaint 1..5", "line 3: “Maint” is not a dimension name: lowercase"),
        (f"{'x' * 33} 1..5", "is not a dimension name"),
        ("ok 5..1", "line 1: the scale of ok must run from a whole number to a higher one"),
        ("ok 1..101", "both within 0–100"),
        ("ok 1..5\nok 1..3", "line 2: ok is named twice"),
        ("\n".join(f"d{n} 1..5" for n in range(9)), "at most 8 dimensions"),
    ],
)
def test_a_bad_line_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(DimensionsError, match=re.escape(message)):
        dimensions_parse(text, JUDGE_SCALES)


def test_one_name_rule_reads_every_name_either_app_stored_before() -> None:
    # Before: campaigns allowed "-" up to 24 characters, judges "_" up to 32.
    for name in ("code-style", "a_b", "x" * 32, "s3"):
        assert NAME.match(name)
        assert campaign_dimensions_parse(f"{name} 1..5")[0].name == name
        assert answer_spec("dimensions", [{"name": name, "low": 1, "high": 5}]).dimensions
    for name in ("Maint", "1st", "a b", "x" * 33, "naïve"):
        assert not NAME.match(name)


def test_json_objects_are_checked_as_lines_are_naming_their_place() -> None:
    bounds = Bounds(1, 9, " (why)")
    assert dimensions_from_json([{"name": "a", "low": 1, "high": 3}], bounds) == [
        Dimension("a", 1, 3)
    ]
    for given, message in [
        ([{"name": "a", "low": 1, "high": 3}, "b"], "dimension 2: a dimension is an object"),
        ([{"name": "a", "low": 1, "high": 3, "weight": 2}], "dimension 1: unknown field"),
        ([{"name": "a", "low": True, "high": 3}], "dimension 1: the scale of a"),
        ([{"name": "a", "low": 0, "high": 3}], "both within 1–9 (why)"),
        ([{"name": "a", "low": 1, "high": 3, "description": 4}], "description of a"),
    ]:
        with pytest.raises(DimensionsError, match=re.escape(message)):
            dimensions_from_json(given, bounds)


def test_every_shipped_and_stored_shape_reads() -> None:
    # The starters' dimensions, and a campaign's as stored before descriptions (no key).
    for path in STARTERS.glob("*.json"):
        data = json.loads(path.read_text())
        spec = answer_spec(data["kind"], data.get("dimensions", []), data.get("overall", ""))
        assert [d.as_json() for d in spec.dimensions] == data.get("dimensions", [])
    assert dimensions_of([{"name": "code-style", "low": 1, "high": 5}]) == [
        Dimension("code-style", 1, 5)
    ]


@pytest.mark.django_db
def test_the_same_line_typed_for_a_campaign_and_a_judge_pairs_them_in_the_report() -> None:
    # A name with "-", which only campaigns took before: the report reads the judge's rating
    # of it from the answers' JSON (the database extracts it) and pairs the two by name.
    line = "code-style 1..5 Consistent with the code around it?"
    [campaign_dimension] = campaign_dimensions_parse(line)
    spec = answer_spec("dimensions", [d.as_json() for d in dimensions_parse(line, JUDGE_SCALES)])
    assert spec.dimensions == (campaign_dimension,)
    dataset = DatasetFactory(name="Paired", slug="paired")
    bug = BugFactory(dataset=dataset)
    patches = [PatchFactory(bug=bug, diff=make_diff(new=f"p = {n}")) for n in range(4)]
    people = [make_annotator("pair-a"), make_annotator("pair-b")]
    campaign = create_campaign(dataset, people, overlap=2, dimensions=[campaign_dimension])
    for n, patch in enumerate(patches):
        for person in people:
            annotation_record(
                campaign=campaign, annotator=person, patch=patch, label=Label.VALID,
                ratings={"code-style": 1 + n},
            )  # fmt: skip
    member = "style@1"
    ratings = {patch: 1 + n for n, patch in enumerate(patches)}
    run = written_rating_run(dataset, member, ratings, dimension="code-style")
    report = agreement_report(dataset, runs=[run], sampling=Sampling(resamples=20))
    [section] = report.dimensions or []
    assert section.name == "code-style"
    [judged] = section.judges
    assert (judged.member, judged.patches) == (member, 4)
    assert judged.spearman.value == pytest.approx(1.0)
