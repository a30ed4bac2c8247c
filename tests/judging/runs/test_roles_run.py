"""The ``roles`` strategy in a run: offered by the new-run form and the ``judge`` command,
refused by the pre-flight without a reference, four calls per patch, its result with one step
per role, a failed role failing the patch like any member (and retried from the cache), and
the verdict page's table of each role's score and reasoning."""

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from pytest_django.fixtures import Settings

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.execution import MEMBERS_FAILED
from judging.runs.selectors import LACKS_REFERENCE, run_preflight
from judging.strategies.roles import PERSONAS
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.models import LLMCall
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import Judge, scored
from tests.rubrics.factories import BugFactory, PatchFactory
from tests.sejury_web.llm.fake_servers import OpenAIServer, error
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db

NAMES = [role.name for role in PERSONAS]
LABELS = ["Code reviewer", "Original developer", "Maintainer", "QA/system analyst"]


def role_rows(html: str) -> list[tuple[str, str, str]]:
    """The verdict page's role table as (role, score, reasoning) rows."""
    table = html[html.index('class="table compact role-scores"') :]
    table = table[: table.index("</table>")]
    body = table[table.index("<tbody>") :]
    return re.findall(
        r'<th scope="row">(.*?)</th>\s*<td class="num">(.*?)</td>\s*'
        r'<td><pre class="prose reasoning">(.*?)</pre></td>',
        body,
        re.S,
    )


def test_a_run_asks_four_calls_per_patch_and_keeps_each_roles_answer(
    openai_server: OpenAIServer, judge_now: Judge, lead_client: Client
) -> None:
    bug = bug_with_patches(1)
    openai_server.script(scored(50), scored(20), scored(40), scored(60), scored(90))

    run = judge_now(dataset=bug.dataset, strategies="s1b,roles", context="reference")

    assert openai_server.request_count == 5  # s1b 1 + roles 4
    judgment = run.judgments.get()
    result = judgment.results.get(strategy="roles")
    assert (result.status, result.score, result.prompt_version) == ("done", 52.5, "roles-v2")
    assert result.provider_calls == 4
    calls = [LLMCall.objects.get(pk=pk) for pk in result.call_ids]
    assert [call.purpose for call in calls] == ["judge.roles"] * 4
    assert [call.inputs["role"] for call in calls] == NAMES
    assert {name: answer["score"] for name, answer in result.answers.items()} == dict(
        zip(NAMES, [20, 40, 60, 90], strict=True)
    )
    # The team: s1b's 50 and the roles' mean 52.5.
    assert (judgment.status, judgment.score, judgment.verdict) == ("done", 51.25, "VALID")

    html = lead_client.get(judgment.get_absolute_url()).content.decode()

    section = html[html.index('id="member-roles"') :]
    assert role_rows(section) == [
        (label, str(score), f"Scored {score}.")
        for label, score in zip(LABELS, [20, 40, 60, 90], strict=True)
    ]
    assert "the score above is the mean of these" in section
    assert "score <b>52.50</b> of 100" in section
    for number, name in enumerate(NAMES, start=1):  # each call is named after its role
        assert f"Step {number}: {name} <code>judge.roles</code>" in section
    s1b_section = html[html.index('id="member-s1b"') : html.index('id="member-roles"')]
    assert "role-scores" not in s1b_section  # other strategies keep their reasoning
    assert "<h3>Reasoning</h3>" in s1b_section


def test_a_failed_role_fails_the_patch_and_is_retried_alone(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    resume_now: Judge,
    lead_client: Client,
) -> None:
    point_at(settings, tmp_path, MAX_ATTEMPTS=2)
    bug = bug_with_patches(1)
    openai_server.script(scored(20), scored(40), error(500, "down"), error(500, "still down"))

    run = judge_now(dataset=bug.dataset, strategies="roles", context="reference")

    assert openai_server.request_count == 4  # the maintainer's call twice; QA never asked
    judgment = run.judgments.get()
    failed = judgment.results.get(strategy="roles")
    assert (failed.status, failed.score, failed.answers) == (
        StrategyResult.Status.FAILED,
        None,
        {},
    )
    assert failed.error.startswith("gave up after 2 attempts: ")
    assert len(failed.call_ids) == 3  # two answers and the failed call, all kept
    assert failed.provider_calls == 3
    assert judgment.status == PatchJudgment.Status.FAILED
    assert judgment.error == MEMBERS_FAILED.format(
        count=1, total=1, errors=f"roles: {failed.error}"
    )
    html = lead_client.get(judgment.get_absolute_url()).content.decode()
    assert "role-scores" not in html  # no score to table
    assert "Step 3: maintainer <code>judge.roles</code>" in html
    assert escape(failed.error) in html

    openai_server.script(scored(60), scored(90))
    run = resume_now(run=run, retry_failed=True)

    # The reviewer and the developer come from the cache: two new calls only.
    assert openai_server.request_count == 6
    judgment.refresh_from_db()
    assert (judgment.status, judgment.score) == ("done", 52.5)
    assert run.status == JudgingRun.Status.FINISHED


def test_an_offline_run_tables_the_same_score_for_every_role_and_says_why(
    judge_now: Judge, lead_client: Client
) -> None:
    bug = bug_with_patches(1)

    run = judge_now(dataset=bug.dataset, strategies="roles", context="reference")

    judgment = run.judgments.get()
    result = judgment.results.get(strategy="roles")
    assert result.is_offline
    html = lead_client.get(judgment.get_absolute_url()).content.decode()
    rows = role_rows(html)
    assert [label for label, _, _ in rows] == LABELS
    assert len({(score, reasoning) for _, score, reasoning in rows}) == 1
    _, score, reasoning = rows[0]
    assert float(score) == result.score
    assert reasoning.startswith(escape(f"[{OFFLINE_MARKER}] "))
    assert "does not play roles" in reasoning


def test_the_form_the_command_and_the_preflight_know_roles(
    lead_client: Client, eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    bug = bug_with_patches(2)

    form = lead_client.get(reverse("judging:run_new")).content.decode()
    assert 'value="roles"' in form
    assert "<b>Role players</b> <code>roles</code>" in form

    preflight = run_preflight(dataset=bug.dataset, strategies=["roles"], context="none")
    assert (preflight.total, preflight.ready, preflight.lacks) == (2, 2, [])
    without = BugFactory(dataset=bug.dataset, reference_patch="")
    PatchFactory(bug=without, key="NO-REF-1")
    preflight = run_preflight(dataset=bug.dataset, strategies=["roles"], context="none")
    [lack] = preflight.lacks
    assert (lack.what, lack.count, lack.members) == (LACKS_REFERENCE, 1, ["roles"])

    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "judge", "--dataset", bug.dataset.slug, "--team", "roles", "--context", "reference",
            "--patches", f"{bug.key}-0", stdout=out, stderr=io.StringIO(),
        )  # fmt: skip
    run = JudgingRun.objects.get()
    assert run.strategies == ["roles"]
    assert "judged by roles" in out.getvalue()
    assert len(run.judgments.get().results.get().call_ids) == 4
