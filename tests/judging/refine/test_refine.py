"""The evaluator tester: configurations parsed, a run per configuration (reused when it
exists), the ranking read from runs (teams and their members, any scale), the ``refine``
command's JSON, and the pages' roles."""

import io
import json
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils.html import escape
from pytest_django import DjangoCaptureOnCommitCallbacks as OnCommit

from judging.models import Context, JudgingRun
from judging.refine.scores import ordering
from judging.refine.selectors import ladder_runs, refine_ranking
from judging.refine.services import Configuration, configurations_parse, refine_start
from judging.runs.services import RunError
from rubrics.ladders.services import ladders_build
from rubrics.models import Dataset, Patch
from rubrics.selectors import UNKNOWN_DATASET
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD, logs_in
from tests.judging.factories import finished_run
from tests.rubrics.factories import BugFactory, DatasetFactory

pytestmark = pytest.mark.django_db

FIX = "\n".join(
    [
        "diff --git a/src/calc.py b/src/calc.py",
        "--- a/src/calc.py",
        "+++ b/src/calc.py",
        "@@ -1,8 +1,9 @@",
        " def total(items):",
        "-    if len(items) < 0:",
        "+    if len(items) == 0:",
        "         return 0",
        "-    return sum(items[1:])",
        "+    result = sum(items)",
        "+    return result",
        " ",
        " ",
        " def limit():",
        "-    return 9",
        "+    return 10",
        "",
    ]
)


@pytest.fixture
def ladder() -> Dataset:
    source = DatasetFactory(name="Calc", slug="calc")
    for key in ("Calc-1", "Calc-2", "Calc-10"):
        BugFactory(dataset=source, key=key, reference_patch=FIX)
    return ladders_build(dataset=source, actor=None).ladder


def test_configurations_parse_with_default_contexts_and_name_the_bad_one() -> None:
    configs = configurations_parse("s1b; s3;rubric@golden; s1b,s2,s3 ;rubric;; s1b")
    assert configs == [
        Configuration(("s1b",), Context.REFERENCE),
        Configuration(("s3",), Context.REFERENCE),
        Configuration(("rubric",), Context.GOLDEN),
        Configuration(("s1b", "s2", "s3"), Context.REFERENCE),
    ]  # "rubric" alone is rubric@golden; the repeated s1b is dropped
    with pytest.raises(RunError, match="configuration 's9@golden': unknown strategy 's9'"):
        configurations_parse("s1b;s9@golden")
    with pytest.raises(RunError, match="configuration 's1b@golden-ish': unknown context"):
        configurations_parse("s1b@golden-ish")
    with pytest.raises(RunError, match="at least one configuration"):
        configurations_parse(" ; ")


def _scores(run: JudgingRun, score_of: Any) -> JudgingRun:
    """Give each of the run's judgments the score ``score_of(level)``."""
    for judgment in run.judgments.select_related("patch"):
        level = int(judgment.patch.source.rsplit("L", 1)[1])
        judgment.score = score_of(level, judgment.patch.bug.key)
        judgment.save()
    return run


def test_the_ranking_orders_runs_and_team_members_by_alignment(ladder: Dataset) -> None:
    patches = list(ladder.patches.select_related("bug"))
    levels = {p: int(p.source[-1]) for p in patches}
    # A team whose s1b member keeps the order and whose s3 member reverses it.
    team = finished_run(
        ladder,
        {
            p: ("VALID", {"s1b": {"score": 100 - 20 * lv}, "s3": {"score": 20 * lv}})
            for p, lv in levels.items()
        },
        team=["s1b", "s3"],
        context="reference",
    )
    _scores(team, lambda level, bug: 50.0)  # the team's mean: every level tied
    # A single strategy on a 1–5 scale that confuses L1 with a worse patch on one bug.
    five = finished_run(
        ladder, {p: ("VALID", {}) for p in patches}, team=["s1a"], scale_lo=1, scale_hi=5
    )
    _scores(five, lambda level, bug: 1.0 if (bug, level) == ("Calc-2", 1) else 5.0 - level)
    ranking = refine_ranking(ladder, runs=ladder_runs(ladder))
    labels = [(r.evaluator.label, r.evaluator.member_of) for r in ranking]
    assert labels == [
        ("s1b", ("s1b", "s3")),
        ("s1a@golden", ()),
        ("s1b,s3", ()),
        ("s3", ("s1b", "s3")),
    ]
    first, single, whole, last = (r.ordering for r in ranking)
    assert (first.alignment.value, last.alignment.value, whole.alignment.value) == (1, 0, 0.5)
    # the 1–5 scale is read on 0–100: 5 → 100, 4 → 75, …; its figures are those of the
    # same scores computed directly
    expected = {
        bug.key: {
            lv: (0.0 if (bug.key, lv) == ("Calc-2", 1) else (4.0 - lv) * 25)
            for lv in range(5)
            if ladder.patches.filter(bug=bug, source=f"ladder:L{lv}").exists()
        }
        for bug in ladder.bugs.all()
    }
    assert single.alignment == ordering(expected).alignment
    assert single.level_means[0].value == 100.0
    assert [bug.bug for bug in single.worst()] == ["Calc-2"]
    assert ranking[1].evaluator.judged == len(patches)


def test_a_failed_judgment_is_counted_and_left_out(ladder: Dataset) -> None:
    patches = list(ladder.patches.all())
    run = finished_run(ladder, {p: ("VALID" if i else "", {}) for i, p in enumerate(patches)},
                       team=["s1b"], context="reference")  # fmt: skip
    [row] = refine_ranking(ladder, runs=[run])
    assert (row.evaluator.failed, row.evaluator.judged) == (1, len(patches) - 1)


def test_refine_start_creates_a_run_per_configuration_and_reuses_them(
    ladder: Dataset, eager_tasks: None, django_capture_on_commit_callbacks: OnCommit
) -> None:
    configs = configurations_parse("s1b;s1a,s3")
    with django_capture_on_commit_callbacks(execute=True):
        started = refine_start(ladder=ladder, configurations=configs, actor=None)
    assert [(run.strategies, run.context, new) for run, new in started] == [
        (["s1b"], "reference", True),
        (["s1a", "s3"], "reference", True),
    ]
    assert all(run.name.startswith("REFINE ") for run, _ in started)
    again = refine_start(ladder=ladder, configurations=configs, actor=None)
    assert [(run.pk, new) for run, new in again] == [(run.pk, False) for run, _ in started]
    # a patch added since (a new level built) makes the configuration run again
    source = ladder.derived_from
    assert source is not None
    Patch.objects.filter(dataset=ladder, source="ladder:L4").delete()
    JudgingRun.objects.update(created_at=JudgingRun.objects.first().created_at)  # type: ignore[union-attr]
    ladders_build(dataset=source, actor=None)
    with django_capture_on_commit_callbacks(execute=True):
        third = refine_start(ladder=ladder, configurations=configs[:1], actor=None)
    assert third[0][1] is True
    # a configuration that can judge no patch (no golden rubric here) starts no run at all
    runs = JudgingRun.objects.count()
    with pytest.raises(RunError, match="configuration 'rubric@golden': no run was started"):
        refine_start(ladder=ladder, configurations=configurations_parse("s2;rubric"), actor=None)
    assert JudgingRun.objects.count() == runs
    with pytest.raises(RunError, match="not a ladder dataset"):
        refine_start(ladder=source, configurations=configs, actor=None)


def refine(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("refine", *args, "--format", "json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_the_command_builds_judges_and_prints_each_configuration(
    eager_tasks: None, django_capture_on_commit_callbacks: OnCommit
) -> None:
    source = DatasetFactory(name="Calc", slug="calc")
    for key in ("Calc-1", "Calc-2"):
        BugFactory(dataset=source, key=key, reference_patch=FIX)
    with django_capture_on_commit_callbacks(execute=True):
        started = refine("--dataset", "calc", "--configs", "s1b;s1b,s3", "--levels", "0,2,3,4")
    # without --wait: what is judged so far, here nothing (the tasks ran after the command)
    assert {row["run_status"] for row in started["configurations"]} == {"queued"}
    assert {row["bugs"] for row in started["configurations"]} == {0}
    record = refine("--dataset", "calc", "--configs", "s1b;s1b,s3", "--levels", "0,2,3,4")
    ladder = Dataset.objects.get(derived_from=source)
    assert record["ladder"] == ladder.name
    assert record["source"] == "Calc"
    assert list(record["levels"]) == ["0", "2", "3", "4"]
    assert not ladder.patches.filter(source="ladder:L1").exists()  # only the levels asked
    configs = {(row["config"], tuple(row["member_of"] or ())) for row in record["configurations"]}
    assert configs == {("s1b", ()), ("s1b,s3", ()), ("s1b", ("s1b", "s3")), ("s3", ("s1b", "s3"))}
    for row in record["configurations"]:
        assert row["offline"] is True
        assert row["run_status"] == "finished"
        assert row["bugs"] == 2
        assert row["patches_failed"] == 0
        for figure in ("alignment", "alignment_strict", "tau_b"):
            value = row[figure]
            assert value["ci_lo"] <= value["value"] <= value["ci_hi"]
        assert list(row["level_means"]) == ["0", "2", "3", "4"]
    ranks = [row["rank"] for row in record["configurations"]]
    assert ranks == [1, 2, 3, 4]
    alignments = [row["alignment"]["value"] for row in record["configurations"]]
    assert alignments == sorted(alignments, reverse=True)
    assert record["notes"] == [f"Offline configurations' scores come from the {OFFLINE_MARKER}."]
    # the same configurations, named by the ladder dataset: the runs are reused
    again = refine("--dataset", ladder.name, "--configs", "s1b;s1b,s3", "--levels", "0,2,3,4")
    assert again["configurations"] == record["configurations"]
    assert JudgingRun.objects.count() == 2


def test_the_command_names_what_is_wrong() -> None:
    DatasetFactory(name="Calc", slug="calc")
    with pytest.raises(CommandError, match=re.escape(UNKNOWN_DATASET.format(name="nope"))):
        refine("--dataset", "nope", "--configs", "s1b")
    with pytest.raises(CommandError, match="unknown strategy 'zz'"):
        refine("--dataset", "calc", "--configs", "zz")
    with pytest.raises(CommandError, match="--levels: unknown level 9"):
        refine("--dataset", "calc", "--configs", "s1b", "--levels", "0,9")


def test_the_pages_are_for_leads(ladder: Dataset, client: Client) -> None:
    for username, role in (("rev", Role.REVIEWER), ("ann", Role.ANNOTATOR)):
        user_create(actor=None, username=username, password=PASSWORD, roles=[role])
        assert logs_in(client, username, PASSWORD)
        for url in ("/refine/", f"/refine/{ladder.slug}/"):
            assert client.get(url).status_code == 403
        assert client.post(f"/refine/{ladder.slug}/test/", {"configs": "s1b"}).status_code == 403
        assert client.post("/refine/build/calc/").status_code == 403
        client.logout()
    assert Client().get("/refine/").status_code == 302  # to the login page


def test_the_tester_page_refuses_a_bad_configuration_and_keeps_what_was_typed(
    ladder: Dataset, client: Client
) -> None:
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    assert logs_in(client, "lea", PASSWORD)
    response = client.post(
        f"/refine/{ladder.slug}/test/", {"configs": "s1b;<b>s9</b>", "provider": "offline"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "configuration &#x27;&lt;b&gt;s9&lt;/b&gt;&#x27;: unknown strategy" in page
    assert 'value="s1b;&lt;b&gt;s9&lt;/b&gt;"' in page
    assert not JudgingRun.objects.exists()


def test_a_ladder_patch_page_says_its_level_and_what_was_done(
    ladder: Dataset, client: Client
) -> None:
    user_create(actor=None, username="rev", password=PASSWORD, roles=[Role.REVIEWER])
    assert logs_in(client, "rev", PASSWORD)
    patch = ladder.patches.filter(source="ladder:L3").first()
    assert patch is not None
    page = client.get(patch.get_absolute_url()).content.decode()
    operators = "; ".join(patch.metadata["ladder"]["operators"])
    assert "Quality ladder, <b>L3 wrong fix</b>, built from the bug’s reference fix" in page
    assert escape(operators) in page
