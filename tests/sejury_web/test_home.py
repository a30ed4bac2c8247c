"""The home page: each role's part says what needs it, with counts and links, what waits
first; an annotator's says nothing of a verdict; a fixed number of queries at any size."""

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.consensus.selectors import adjudication_counts
from judging.home import adjudication_waiting
from judging.models import Annotation, Assignment, JudgingRun, Label, PatchJudgment
from rubrics.models import BundleUpload, ConsensusRule, Dataset, DraftBatch, Rubric
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD, client_for
from tests.judging.factories import create_campaign, finished_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, rubric_for

pytestmark = pytest.mark.django_db

RUN_NAME = "HOME-RUN-NAME-zq4v"
JUSTIFICATION = "HOME-JUDGE-REASONING-r8kd"
OTHER_NAME = "other-rater-m3tp"


def _person(name: str, *roles: str) -> User:
    return user_create(actor=None, username=name, password=PASSWORD, roles=list(roles))


def build(size: int, annotator: User, other: User) -> Dataset:
    """``size`` of everything a home page counts, in one dataset: rubrics in review, awaiting
    confirmation and drafting; a running run, stale and contradicted rubric verdicts, disputed
    patches; an upload in progress; a campaign of every patch for ``annotator`` and ``other``."""
    dataset = DatasetFactory(name=f"Home data {size}")
    judged = {}
    for n in range(size):
        bug = BugFactory(dataset=dataset, key=f"B{n}")
        patches = [PatchFactory(bug=bug, key=f"B{n}-{k}") for k in range(3)]
        # In review; awaiting confirmation (someone else's edit); drafting in a batch.
        rubric_for(bug, draft="## Requirements\n\n1. In review.")
        golden = rubric_for(
            BugFactory(dataset=dataset, key=f"C{n}"), draft="d", golden="g", pending="p"
        )
        drafting = Rubric.objects.create(
            bug=BugFactory(dataset=dataset, key=f"D{n}"), status=Rubric.Status.DRAFTING
        )
        DraftBatch.objects.create(dataset=dataset, variant=drafting.variant).rubrics.add(drafting)
        # The rubric judge read the older revision 0 (stale) and says INVALID where both
        # annotators say VALID (a disagreement); patch 1 is disputed.
        judged[patches[0]] = (
            Label.INVALID,
            {
                "rubric": {
                    "verdict": Label.INVALID,
                    "rubric_revision": golden.revisions.get(number=0),
                    "reasoning": JUSTIFICATION,
                }
            },
        )
        for person in (annotator, other):
            Annotation.objects.create(patch=patches[0], annotator=person, label=Label.VALID)
        Annotation.objects.create(patch=patches[1], annotator=annotator, label=Label.VALID)
        Annotation.objects.create(patch=patches[1], annotator=other, label=Label.INVALID)
        BundleUpload.objects.create(dataset_name=f"upload {n}", path="x", size=1)
    # Patch 0's judge result is of a rubric of another bug (C…), which is what the
    # disagreement source reads: the revision's rubric.
    run = finished_run(
        dataset, judged, team=["rubric"], name=RUN_NAME, status=JudgingRun.Status.RUNNING
    )
    for patch in dataset.patches.exclude(pk__in=[p.pk for p in judged]):
        PatchJudgment.objects.create(run=run, patch=patch)
    create_campaign(dataset, [annotator, other], name=f"Round {size}")
    return dataset


@pytest.fixture
def people() -> dict[str, User]:
    return {
        "lead": _person("lead", Role.LEAD),
        "reviewer": _person("reviewer", Role.REVIEWER),
        "annotator": _person("annotator", Role.ANNOTATOR),
        "other": _person(OTHER_NAME, Role.ANNOTATOR),
        "all": _person("everyone", Role.LEAD, Role.REVIEWER, Role.ANNOTATOR),
    }


def _items(html: str) -> dict[str, int]:
    """Each item the page shows, by key, with its count."""
    found = re.findall(r'data-home-item="([\w-]+)" data-count="(\d+)"', html)
    return {key: int(count) for key, count in found}


def _parts(html: str) -> list[str]:
    return re.findall(r'data-home-role="(\w+)"', html)


def test_each_role_home_says_what_needs_it(people: dict[str, User]) -> None:
    dataset = build(2, people["annotator"], people["other"])

    lead = client_for(people["lead"]).get("/")
    assert lead.status_code == 200
    html = lead.content.decode()
    assert _parts(html) == [Role.LEAD]
    assert _items(html) == {
        "runs": 1,
        "adjudication": 2,  # the disputed patches
        "stale": 2,  # patches 0 of both bugs, in one run
        "flagged": 2,
        "uploads": 2,
        "drafts": 2,
    }
    assert reverse("judging:adjudication_queue", args=[dataset.slug]) in html
    assert RUN_NAME in html
    assert "2 of 6 patches judged" in html

    reviewer = client_for(people["reviewer"]).get("/").content.decode()
    assert _parts(reviewer) == [Role.REVIEWER]
    assert _items(reviewer) == {"confirm": 2, "review": 2, "flagged": 2, "sent-back": 0}
    # What waits comes first: the empty item is a line after the cards, not a table.
    assert reviewer.index('data-home-item="flagged"') < reviewer.index("No rubric was sent back")
    assert "<table" not in reviewer

    annotator = client_for(people["annotator"]).get("/").content.decode()
    assert _parts(annotator) == [Role.ANNOTATOR]
    assert _items(annotator) == {"campaigns": 1}
    assigned = Assignment.objects.filter(annotator=people["annotator"]).count()
    # Of its assignments, patches 0 and 1 of each bug are labelled (by hand, outside it).
    assert f"4 of {assigned} labelled, {assigned - 4} left" in annotator
    assert "Continue" in annotator
    # Blind: nothing of the run, its verdicts or the other annotator.
    for secret in (RUN_NAME, JUSTIFICATION, OTHER_NAME):
        assert secret not in annotator
    for word in ("verdict", "judge", "invalid", "disagree"):
        assert word not in annotator.lower()


def _links(html: str) -> set[str]:
    """The links of the page's parts (not the menu's), without their anchors."""
    main = html[html.index('<section class="home-part"') :]
    return {href.split("#")[0] for href in re.findall(r'href="([^"]+)"', main)}


def test_every_link_of_a_role_s_part_opens_for_that_role(people: dict[str, User]) -> None:
    build(1, people["annotator"], people["other"])
    for name in ("lead", "reviewer", "annotator"):
        client = client_for(people[name])
        links = _links(client.get("/").content.decode())
        assert len(links) >= 2, name
        for link in links:
            assert client.get(link).status_code == 200, (name, link)
    # A lead who reviews too sees the flagged rubrics once, in the lead's part.
    both = _person("lead-reviewer", Role.LEAD, Role.REVIEWER)
    client = client_for(both)
    html = client.get("/").content.decode()
    assert html.count('data-home-item="flagged"') == 1
    for link in _links(html):
        assert client.get(link).status_code == 200, ("lead-reviewer", link)


def test_several_roles_see_each_part_and_nothing_says_so_in_a_line(
    people: dict[str, User],
) -> None:
    html = client_for(people["all"]).get("/").content.decode()
    assert _parts(html) == [Role.LEAD, Role.REVIEWER, Role.ANNOTATOR]
    assert "<table" not in html
    assert '<section class="card home-item"' not in html
    for line in (
        "No judging run is in progress.",
        "No patch waits for adjudication.",
        "No verdict is stale.",
        "No rubric awaits review.",
        "No campaign has patches left for you to label.",
    ):
        assert line in html
    nobody = Client()
    nobody.force_login(User.objects.create(username="nobody"))
    assert nobody.get("/").status_code == 403


def test_home_costs_the_same_queries_at_two_sizes(people: dict[str, User]) -> None:
    client = client_for(people["all"])
    build(1, people["all"], people["other"])
    client.get("/")  # the session and the user's roles, read once
    with CaptureQueriesContext(connection) as small:
        assert client.get("/").status_code == 200
    build(8, people["all"], people["other"])
    with CaptureQueriesContext(connection) as large:
        html = client.get("/").content.decode()
    assert _items(html)["review"] == 9
    assert len(large.captured_queries) == len(small.captured_queries)
    assert len(small.captured_queries) < 45, len(small.captured_queries)


@pytest.mark.parametrize("rule", [ConsensusRule.UNANIMOUS, ConsensusRule.MAJORITY])
def test_adjudication_waiting_is_the_queue_s_waiting(rule: str) -> None:
    dataset = DatasetFactory(consensus_rule=rule)
    people = [_person(f"rater{n}", Role.ANNOTATOR) for n in range(4)]
    labels = [
        "V",  # too few
        "VV",  # unanimous
        "VI",  # disputed
        "VVI",  # a majority's under the majority rule
        "VVII",  # disputed
        "VVVI",  # a majority's
        "U",  # only unsure: too few
        "VUU",  # too few decisive
        "IIU",  # unanimous
    ]
    code = {"V": Label.VALID, "I": Label.INVALID, "U": Label.UNSURE}
    bug = BugFactory(dataset=dataset)
    for n, given in enumerate(labels):
        patch = PatchFactory(bug=bug, key=f"p{n}")
        for person, letter in zip(people, given, strict=False):
            Annotation.objects.create(patch=patch, annotator=person, label=code[letter])
    PatchFactory(bug=bug, key="unlabelled")
    expected = adjudication_counts(dataset=dataset).waiting
    assert expected == (7 if rule == ConsensusRule.UNANIMOUS else 5)
    assert adjudication_waiting().filter(dataset=dataset).count() == expected
