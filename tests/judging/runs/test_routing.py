"""Routing a run's least certain verdicts to humans: the uncertainty ordering, the plan
(budget, settled patches left out, the expected time), the campaign linked to the run, and
``manage.py route_uncertain``."""

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import (
    Adjudication,
    Annotation,
    Assignment,
    Campaign,
    JudgingRun,
    PatchJudgment,
    StrategyResult,
)
from judging.runs.routing import (
    DEFAULT_SECONDS_PER_LABEL,
    MIN_TIMED_LABELS,
    NOT_FINISHED,
    ROUTED_NAME,
    RoutingError,
    route,
    routing_plan,
)
from judging.runs.routing_forms import ONE_BUDGET
from judging.runs.selectors import UNKNOWN_RUN
from judging.runs.uncertainty import margin_ranking, run_uncertainties, uncertainty_order
from rubrics.models import Dataset, Patch
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.judging.factories import UserFactory, bug_with_patches
from tests.rubrics.factories import DatasetFactory

pytestmark = pytest.mark.django_db

V, I = "VALID", "INVALID"  # noqa: E741
# patch → (team score on 0–100, verdict, spread, members' scores, rubric member's verdict)
JUDGED = {
    "p0": (52.0, V, 10.0, {"rubric": 60.0, "s2": 44.0}, V),  # margin .02, split
    "p1": (90.0, V, 20.0, {"rubric": 95.0, "s2": 85.0}, V),  # sure
    "p2": (45.0, I, 30.0, {"rubric": 70.0, "s2": 20.0}, V),  # margin .05, split, rubric differs
    "p3": (10.0, I, 2.0, {"rubric": 9.0, "s2": 11.0}, I),  # sure
    "p4": (48.0, I, 60.0, {"rubric": 10.0, "s2": 86.0}, I),  # margin .02, widest spread
}


def judged_run(dataset: Dataset, patches: dict[str, Patch], **fields: object) -> JudgingRun:
    run = JudgingRun.objects.create(
        dataset=dataset, strategies=["rubric", "s2"], context="golden", provider="offline",
        model="offline", status=JudgingRun.Status.FINISHED, **fields,
    )  # fmt: skip
    for key, (score, verdict, spread, members, rubric) in JUDGED.items():
        judgment = PatchJudgment.objects.create(
            run=run, patch=patches[key], status="done", score=score, verdict=verdict,
            spread=spread,
        )  # fmt: skip
        for name, member in members.items():
            StrategyResult.objects.create(
                judgment=judgment, strategy=name, status="done", score=member,
                verdict=rubric if name == "rubric" else "", prompt_version="test",
            )  # fmt: skip
    return run


@pytest.fixture
def setting() -> tuple[Dataset, dict[str, Patch], JudgingRun]:
    dataset = DatasetFactory(name="Routing", slug="routing")
    bug = bug_with_patches(len(JUDGED), dataset=dataset, key="B")
    patches = {f"p{n}": patch for n, patch in enumerate(bug.patches.order_by("key"))}
    return dataset, patches, judged_run(dataset, patches)


def annotator(name: str) -> User:
    return user_create(actor=None, username=name, password=None, roles=[Role.ANNOTATOR])


def keys(items: list) -> list[str]:  # type: ignore[type-arg]
    return [f"p{item.patch_key.rsplit('-', 1)[1]}" for item in items]


def test_each_signal_orders_the_verdicts_least_certain_first(setting: tuple) -> None:  # type: ignore[type-arg]
    _, _, run = setting
    items = run_uncertainties(run)
    by_key = dict(zip(keys(items), items, strict=True))
    assert by_key["p0"].margin == pytest.approx(0.02)
    assert by_key["p0"].split
    assert by_key["p2"].split
    assert not by_key["p1"].split
    assert by_key["p2"].rubric_disagrees
    assert not by_key["p0"].rubric_disagrees
    # Margin first, then the wider spread: p4 (0.02, spread 60) before p0 (0.02, 10).
    assert keys(uncertainty_order(items)) == ["p4", "p0", "p2", "p1", "p3"]
    assert keys(uncertainty_order(items, "spread")) == ["p4", "p2", "p1", "p0", "p3"]
    assert keys(uncertainty_order(items, "split")) == ["p4", "p0", "p2", "p1", "p3"]
    assert keys(uncertainty_order(items, "rubric")) == ["p2", "p4", "p0", "p1", "p3"]
    with pytest.raises(ValueError, match="unknown signal"):
        uncertainty_order(items, "vibes")


def test_the_margin_is_a_share_of_the_runs_scale(setting: tuple) -> None:  # type: ignore[type-arg]
    dataset, patches, _ = setting
    run = judged_run(dataset, patches, scale_lo=1.0, scale_hi=5.0, threshold=3.0)
    PatchJudgment.objects.filter(run=run, patch=patches["p0"]).update(score=3.2)
    (item,) = [i for i in run_uncertainties(run) if i.patch_id == patches["p0"].pk]
    assert item.margin == pytest.approx(0.05)


def test_the_plan_takes_the_budget_leaves_settled_patches_out_and_estimates_time(
    setting: tuple,  # type: ignore[type-arg]
) -> None:
    _dataset, patches, run = setting
    Adjudication.objects.create(patch=patches["p4"], label=I)  # humans settled p4 already
    rater = UserFactory(username="timed")
    Annotation.objects.create(patch=patches["p1"], annotator=rater, label=V, seconds_spent=30)
    Annotation.objects.create(patch=patches["p3"], annotator=rater, label=I, seconds_spent=50)
    plan = routing_plan(run=run, budget=2, overlap=3)
    assert keys(plan.patches) == ["p0", "p2"]
    assert (plan.candidates, plan.settled) == (4, 1)
    # Two timed labels are no sample: the default stays, and the plan says how many there are.
    assert (plan.seconds_per_label, plan.seconds_from_labels) == (DEFAULT_SECONDS_PER_LABEL, 0)
    assert plan.timed_labels == 2
    assert plan.labels == 6
    assert (plan.expected_seconds, plan.expected_minutes) == (720.0, 12)
    # A share is of the unsettled verdicts, rounded up: 30 % of 4 is 2.
    assert keys(routing_plan(run=run, share=0.3).patches) == ["p0", "p2"]
    # From MIN_TIMED_LABELS on, their median replaces it (these labels settle patches too).
    for n in range(MIN_TIMED_LABELS - 2):
        other = UserFactory(username=f"timed{n}")
        patch = patches[f"p{n % 4}"]
        Annotation.objects.create(patch=patch, annotator=other, label=V, seconds_spent=40)
    plan = routing_plan(run=run, share=1.0, overlap=3)
    assert plan.seconds_per_label == 40.0
    assert plan.seconds_from_labels == plan.timed_labels == MIN_TIMED_LABELS
    assert plan.expected_seconds == plan.labels * 40.0


def test_without_timed_labels_the_default_time_is_used(setting: tuple) -> None:  # type: ignore[type-arg]
    _, _, run = setting
    plan = routing_plan(run=run, share=1.0)
    assert (plan.seconds_per_label, plan.seconds_from_labels) == (DEFAULT_SECONDS_PER_LABEL, 0)
    assert len(plan.patches) == len(JUDGED)


@pytest.mark.parametrize("arguments", [{}, {"budget": 0}, {"share": 0.0}, {"share": 1.5},
                                       {"budget": 2, "share": 0.5}])  # fmt: skip
def test_a_budget_must_be_one_or_the_other_and_positive(
    setting: tuple,
    arguments: dict,  # type: ignore[type-arg]
) -> None:
    _, _, run = setting
    with pytest.raises(RoutingError, match="budget"):
        routing_plan(run=run, **arguments)


def test_only_a_finished_run_is_routed(setting: tuple) -> None:  # type: ignore[type-arg]
    _, _, run = setting
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.RUNNING)
    run.refresh_from_db()
    with pytest.raises(RoutingError) as error:
        routing_plan(run=run, budget=1)
    assert str(error.value) == NOT_FINISHED.format(run=run.pk, status="running")


def test_routing_makes_a_blind_campaign_linked_to_the_run(setting: tuple) -> None:  # type: ignore[type-arg]
    _, patches, run = setting
    people = [annotator("a1"), annotator("a2")]
    plan = routing_plan(run=run, budget=3, overlap=2)
    campaign = route(plan=plan, annotators=people, name="Uncertain", actor=None)
    assert campaign.routed_from == run
    assert campaign.selection == Campaign.Selection.FILTER
    assigned = set(Assignment.objects.filter(campaign=campaign).values_list("patch_id", flat=True))
    assert assigned == {patches[key].pk for key in ("p4", "p0", "p2")}
    assert Assignment.objects.filter(campaign=campaign).count() == 3 * 2
    assert list(run.routed_campaigns.all()) == [campaign]


def test_the_command_prints_the_campaign_and_its_patches(setting: tuple) -> None:  # type: ignore[type-arg]
    _, patches, run = setting
    annotator("a1")
    annotator("a2")
    out, err = StringIO(), StringIO()
    call_command(
        "route_uncertain", "--run", str(run.pk), "--max", "2", "--annotators", "a1, a2",
        "--overlap", "2", "--name", "Round U", stdout=out, stderr=err,
    )  # fmt: skip
    lines = out.getvalue().split()
    campaign = Campaign.objects.get(pk=int(lines[0]))
    assert campaign.name == "Round U"
    assert lines[1:] == [patches["p4"].key, patches["p0"].key]
    assert "4 labels" in err.getvalue()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--run", "999999", "--max", "1", "--annotators", "a1"],
            re.escape(UNKNOWN_RUN.format(run=999999)),
        ),
        (["--max", "1", "--annotators", "nobody"], "no user nobody"),
        (["--max", "1", "--annotators", "a1", "--overlap", "2"], "overlap"),
    ],
)
def test_the_command_says_what_is_wrong(
    setting: tuple,
    arguments: list[str],
    message: str,  # type: ignore[type-arg]
) -> None:
    _, _, run = setting
    annotator("a1")
    if "--run" not in arguments:
        arguments = ["--run", str(run.pk), *arguments]
    with pytest.raises(CommandError, match=message):
        call_command("route_uncertain", *arguments)
    assert not Campaign.objects.exists()


def test_the_ordering_costs_two_queries_at_any_size(setting: tuple) -> None:  # type: ignore[type-arg]
    _, _, run = setting
    with CaptureQueriesContext(connection) as queries:
        run_uncertainties(run)
    assert len(queries) == 2


def route_url(run: JudgingRun) -> str:
    return reverse("judging:run_route", args=[run.pk])


def test_the_lead_previews_then_creates_the_campaign(
    setting: tuple,
    lead_client: Client,  # type: ignore[type-arg]
) -> None:
    _, patches, run = setting
    people = [annotator("a1"), annotator("a2")]
    form = {"patches": "2", "signal": "margin", "annotators": [p.pk for p in people],
            "overlap": "2", "name": "From the page"}  # fmt: skip
    preview = lead_client.get(route_url(run), form)
    assert preview.status_code == 200
    page = preview.content.decode()
    assert [row.patch_key for row in preview.context["plan"].patches] == [
        patches["p4"].key, patches["p0"].key,
    ]  # fmt: skip
    assert 'id="route-patches"' in page
    assert "a default: no label on this dataset has been timed yet" in page
    assert not Campaign.objects.exists()  # a preview makes nothing
    # The page's Preview is a POST (no CSRF token in a URL), and makes nothing either.
    assert 'formmethod="get"' not in page
    assert 'name="preview"' in page
    posted = lead_client.post(route_url(run), {**form, "preview": "1"})
    assert posted.status_code == 200
    assert [row.patch_key for row in posted.context["plan"].patches] == [
        patches["p4"].key, patches["p0"].key,
    ]  # fmt: skip
    assert not Campaign.objects.exists()
    created = lead_client.post(route_url(run), form)
    campaign = Campaign.objects.get()
    assert created.status_code == 302
    assert created["Location"] == reverse("judging:campaign_detail", args=[campaign.pk])
    assert (campaign.name, campaign.routed_from) == ("From the page", run)
    run_page = lead_client.get(run.get_absolute_url()).content.decode()
    assert 'id="run-route"' in run_page
    assert "From the page" in run_page


def test_the_preview_says_the_default_stands_until_enough_labels_are_timed(
    setting: tuple,
    lead_client: Client,  # type: ignore[type-arg]
) -> None:
    _, patches, run = setting
    rater = UserFactory(username="quick")
    for key in ("p1", "p3"):
        Annotation.objects.create(patch=patches[key], annotator=rater, label=V, seconds_spent=2)
    form = {"patches": "1", "signal": "margin", "annotators": [annotator("a1").pk],
            "overlap": "1", "preview": "1"}  # fmt: skip
    page = lead_client.post(route_url(run), form).content.decode()
    text = " ".join(re.sub(r"<[^>]+>", "", page).split())
    assert (
        "about 2 min of annotator time, at 120 s a label — a default: only 2 labels on this "
        f"dataset are timed, and the median needs {MIN_TIMED_LABELS}." in text
    )


def test_a_bad_budget_is_a_form_error_and_nothing_is_made(
    setting: tuple,
    lead_client: Client,  # type: ignore[type-arg]
) -> None:
    _, _, run = setting
    people = [annotator("a1")]
    response = lead_client.post(
        route_url(run),
        {"patches": "2", "percent": "10", "annotators": [people[0].pk], "overlap": "1",
         "signal": "margin"},
    )  # fmt: skip
    assert response.status_code == 400
    assert ONE_BUDGET in response.content.decode()
    assert not Campaign.objects.exists()


@pytest.mark.parametrize("client_name", ["annotator_client", "reviewer_client"])
def test_only_leads_route(
    setting: tuple,
    client_name: str,
    request: pytest.FixtureRequest,  # type: ignore[type-arg]
) -> None:
    _, _, run = setting
    client: Client = request.getfixturevalue(client_name)
    assert client.get(route_url(run)).status_code == 403
    assert client.post(route_url(run), {"patches": "1"}).status_code == 403


def test_the_preview_costs_the_same_queries_at_any_size(
    setting: tuple,
    lead_client: Client,  # type: ignore[type-arg]
) -> None:
    dataset, _, run = setting
    person = annotator("a1")
    form = {"patches": "3", "signal": "margin", "annotators": [person.pk], "overlap": "1"}
    lead_client.get(route_url(run), form)  # the session and the user's roles, once
    with CaptureQueriesContext(connection) as few:
        assert lead_client.get(route_url(run), form).status_code == 200
    bug = bug_with_patches(30, dataset=dataset, key="MORE")
    for number, patch in enumerate(bug.patches.all()):
        PatchJudgment.objects.create(
            run=run, patch=patch, status="done", score=float(number), verdict=I, spread=1.0
        )
    with CaptureQueriesContext(connection) as many:
        assert lead_client.get(route_url(run), form).status_code == 200
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]


def test_the_database_ranking_is_the_default_ordering(setting: tuple) -> None:  # type: ignore[type-arg]
    dataset, _patches, run = setting
    # Ties on the margin, a missing spread, and more patches than the hand-made five.
    bug = bug_with_patches(12, dataset=dataset, key="TIES")
    for number, patch in enumerate(bug.patches.all()):
        PatchJudgment.objects.create(
            run=run, patch=patch, status="done", score=50.0 + (number % 3), verdict=V,
            spread=None if number % 4 == 0 else float(number),
        )  # fmt: skip
    expected = [item.patch_id for item in uncertainty_order(run_uncertainties(run))]
    with CaptureQueriesContext(connection) as queries:
        assert margin_ranking(run) == expected
    assert len(queries) == 1


def test_a_campaign_named_by_no_one_has_the_service_s_name_at_both_doors(
    setting: tuple,
    lead_client: Client,  # type: ignore[type-arg]
) -> None:
    _, _, run = setting
    people = [annotator("a1"), annotator("a2")]
    form = {"patches": "1", "signal": "margin", "annotators": [p.pk for p in people],
            "overlap": "1", "name": " "}  # fmt: skip
    assert lead_client.post(route_url(run), form).status_code == 302
    call_command(
        "route_uncertain", "--run", str(run.pk), "--max", "1", "--annotators", "a1",
        "--overlap", "1", stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    names = list(Campaign.objects.order_by("pk").values_list("name", flat=True))
    assert names == [ROUTED_NAME.format(run=run.pk)] * 2
