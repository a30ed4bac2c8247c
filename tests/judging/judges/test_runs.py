"""A team with written judges judged by a real Celery worker: on the offline model (its
answers labelled as not an LLM's) and on the fake OpenAI server (an answer off its scale
asked again once, then the member failed with the reason); each dimension's rating and
reason stored with the member's result.

One worker serves the module (starting one costs seconds): its environment names the fake
server's port, and each test brings a fresh fake onto it (``answered_by``)."""

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from judging.calibration.selectors import calibration_evaluate, calibration_patch_ids
from judging.calibration.services import calibration_create
from judging.judges.services import judge_define
from judging.models import JudgingRun, PatchJudgment, ReplacedResult, StrategyResult
from judging.runs.services import run_create, run_rejudge_stale
from judging.runs.stale import rejudge_summary, stale_count, stale_results
from rubrics.models import Patch, Rubric
from rubrics.review.drafting import rubric_draft_write
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD
from tests.judging.calibration.factories import campaign_of
from tests.judging.factories import bug_with_patches, confirm_revision
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff
from tests.sejury_web.llm.fake_servers import OpenAIServer, ok, schema_reply
from tests.sejury_web.llm.helpers import point_at
from tests.workers import start_worker

MODEL = "gpt-4o-mini"
NON_FUNCTIONAL: dict[str, Any] = {
    "name": "nonfunctional",
    "title": "Non-functional quality",
    "template": "Rate the patch's quality.\n\n{{ bug }}\n\n{{ reference_fix }}\n\n"
    "{{ test_evidence }}\n\n{{ candidate_patch }}",
    "kind": "dimensions",
    "dimensions": [
        {"name": "maintainability", "low": 1, "high": 5, "description": "easy to change"},
        {"name": "security", "low": 0, "high": 2, "description": "opens no hole"},
    ],
}
MINIMALISM: dict[str, Any] = {
    "name": "minimalism",
    "title": "Rule of Minimalism",
    "template": "INVALID when the patch changes more than the bug needs.\n\n{{ bug }}\n\n"
    "{{ reference_fix }}\n\n{{ candidate_patch }}",
    "kind": "verdict",
}


@dataclass
class Shared:
    server: OpenAIServer
    env: dict[str, str]
    tmp: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.tmp / "worker.log"


@pytest.fixture(scope="module")
def shared(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    tmp = tmp_path_factory.mktemp("written")
    with OpenAIServer(default=schema_reply) as server:
        env = {
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "openai",
            "SEJURY_LLM_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "SEJURY_LLM_LOCK_DIR": str(tmp / "limits"),
            "SEJURY_LLM_LOCAL_FREE": "0",
            "SEJURY_LLM_MAX_ATTEMPTS": "3",
        }
        state = Shared(server, env, tmp)
        state.process = start_worker(state.log, env=env)
        try:
            yield state
        finally:
            state.process.kill()
            state.process.wait()


@pytest.fixture
def fake(shared: Shared, settings: Settings, transactional_db: None) -> Iterator[OpenAIServer]:
    """A fresh fake OpenAI server on the module's port, the settings pointing at it."""
    with shared.server.answered_by(OpenAIServer(default=schema_reply)) as server:
        point_at(
            settings, shared.tmp, PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=server.base_url,
        )  # fmt: skip
        yield server


def _finished(run: JudgingRun, shared: Shared, timeout: float = 60) -> JudgingRun:
    deadline = time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        if run.status == JudgingRun.Status.FINISHED:
            return run
        if time.monotonic() > deadline:
            print(shared.log.read_text(errors="replace")[-6000:])
            raise AssertionError(f"run {run.pk} is still {run.status}")
        time.sleep(0.1)


def _dataset(patches: int = 1) -> list[Any]:
    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, reference_patch=make_diff(old="x = 1", new="x = 2"))
    return [
        PatchFactory(
            bug=bug,
            diff=make_diff(old="x = 1", new=f"x = {2 + n}"),
            tests_pass=True,
            tests_status={"FAIL_TO_PASS": {"success": ["test_x"], "failure": []}},
        )
        for n in range(patches)
    ]


@pytest.mark.worker
def test_a_team_with_written_judges_runs_on_the_offline_model(
    shared: Shared, fake: OpenAIServer
) -> None:
    judge_define(data=NON_FUNCTIONAL, actor=None)
    judge_define(data=MINIMALISM, actor=None)
    [patch] = _dataset()
    run = run_create(
        actor=None, dataset=patch.dataset, strategies="s1b,nonfunctional@1,minimalism@1",
        context="reference", provider="offline", model="heuristic",
    )  # fmt: skip
    _finished(run, shared)
    judgment = PatchJudgment.objects.get(run=run)
    assert judgment.status == PatchJudgment.Status.DONE, judgment.error
    results = {r.strategy: r for r in judgment.results.all()}
    assert set(results) == {"s1b", "nonfunctional@1", "minimalism@1"}
    quality = results["nonfunctional@1"]
    assert (quality.is_offline, quality.prompt_version) == (True, "written:nonfunctional@1")
    ratings = quality.answers["judge"]["dimensions"]
    assert set(ratings) == {"maintainability", "security"}
    for dimension, (low, high) in {"maintainability": (1, 5), "security": (0, 2)}.items():
        assert low <= ratings[dimension]["rating"] <= high
        assert ratings[dimension]["reason"].startswith(f"[{OFFLINE_MARKER}]")
    assert quality.reasoning.startswith(f"[{OFFLINE_MARKER}]")
    minimalism = results["minimalism@1"]
    assert minimalism.verdict in ("VALID", "INVALID")
    assert minimalism.score == (100 if minimalism.verdict == "VALID" else 0)
    assert fake.request_count == 0  # nothing reached a model


def _off_scale() -> str:
    return json.dumps(
        {
            "dimensions": {
                "maintainability": {"rating": 4, "reason": "clear"},
                "security": {"rating": 3, "reason": "off its 0–2 scale"},
            },
            "reasoning": "good",
        }
    )


@pytest.mark.worker
def test_on_a_model_an_answer_off_its_scale_is_asked_again_once_then_fails_the_member(
    shared: Shared, fake: OpenAIServer
) -> None:
    judge_define(data=NON_FUNCTIONAL, actor=None)
    first, second = _dataset(patches=2)
    good = {
        "dimensions": {
            "maintainability": {"rating": 4, "reason": "clear"},
            "security": {"rating": 2, "reason": "safe"},
        },
        "reasoning": "good",
    }
    fake.script(ok(_off_scale()), ok(json.dumps(good)))
    run = run_create(
        actor=None, dataset=first.dataset, strategies="nonfunctional@1", context="reference",
        patches=[first],
    )  # fmt: skip
    _finished(run, shared)
    result = StrategyResult.objects.get(judgment__run=run)
    assert (result.status, result.is_offline) == ("done", False)
    assert result.answers["judge"] == good
    assert result.score == pytest.approx((75 + 100) / 2)  # 4 on 1–5, 2 on 0–2
    assert fake.request_count == 2
    prompt = fake.requests[0].body["messages"][1]["content"]  # type: ignore[index]
    assert "<test_evidence>\nTests pass: yes\nFAIL_TO_PASS" in prompt
    assert prompt.index("<bug_description>") < prompt.index("<candidate_patch>")
    assert "security (an integer from 0 to 2)" in prompt

    fake.script(ok(_off_scale()), ok(_off_scale()))
    run = run_create(
        actor=None, dataset=second.dataset, strategies="nonfunctional@1", context="reference",
        patches=[second],
    )  # fmt: skip
    _finished(run, shared)
    result = StrategyResult.objects.get(judgment__run=run)
    assert result.status == "failed"
    assert "dimensions/security/rating" in result.error
    assert result.score is None


RUBRIC_CHECK: dict[str, Any] = {
    "name": "rubric-check",
    "title": "Every requirement of the golden rubric",
    "template": "VALID when the patch meets every requirement.\n\n{{ bug }}\n\n{{ rubric }}\n\n"
    "{{ candidate_patch }}",
    "kind": "verdict",
}
# Only the reference fix meets it (the offline rule checks the file and the quoted code).
LENIENT = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [{"title": "Change `src/app.py`", "detail": "so that `x = 2`"}],
}
# No patch meets it: none touches `src/other.py`.
STRICT = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [{"title": "Change `src/other.py`", "detail": "where x is set"}],
}


@pytest.mark.worker
def test_a_written_judge_is_calibrated_and_judged_again_when_its_golden_rubric_changes(
    shared: Shared, transactional_db: None
) -> None:
    """A written judge reading ``{{ rubric }}`` in a golden run, on the worker, beside the
    rubric judge and S1b: a candidate of the calibration's teams (alone too), kept as the
    dataset's team; stale once a newer rubric revision is golden, and judged again with the
    rubric judge (a patch counted once), S1b's results kept."""
    people = tuple(
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.REVIEWER])
        for name in ("author", "confirmer")
    )
    bug = bug_with_patches(2)
    ref: Patch = PatchFactory(bug=bug, key=f"{bug.key}-ref", diff=bug.reference_patch)  # type: ignore[assignment]
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk, provider="offline")
    assert confirm_revision(rubric, LENIENT, people) == 1  # type: ignore[arg-type]
    member = judge_define(data=RUBRIC_CHECK, actor=None)[0].label
    run = run_create(
        actor=None, dataset=bug.dataset, strategies=f"rubric,s1b,{member}", context="golden",
        provider="offline", model="heuristic",
    )  # fmt: skip
    _finished(run, shared)
    first = {r.pk: r for r in StrategyResult.objects.filter(judgment__run=run)}
    written = {r.judgment.patch_id: r for r in first.values() if r.strategy == member}
    assert {r.rubric_revision.number for r in written.values()} == {1}  # type: ignore[union-attr]
    assert written[ref.pk].verdict == "VALID"

    # Calibration: the written judge is a candidate as the rubric judge is; a lead keeps one.
    others = [p for p in bug.patches.all() if p != ref]
    campaign = campaign_of(
        bug.dataset, {ref: ("VALID", "VALID"), **dict.fromkeys(others, ("INVALID", "INVALID"))}
    )
    ranking = calibration_evaluate(campaign=campaign, run=run).ranking
    assert {evaluation.team for evaluation in ranking} == {
        ("rubric",), (member,), ("rubric", "s1b"), ("rubric", member), ("s1b", member),
        ("rubric", "s1b", member),
    }  # fmt: skip
    kept = calibration_create(
        campaign=campaign, run=run, team=[member, "s1b", "rubric"], actor=people[0]
    )
    assert kept.team == ["rubric", "s1b", member]  # the built-ins first
    # The run's team is the kept one: reports of the run leave its calibration patches out.
    assert calibration_patch_ids(run)[0] == kept

    # A newer revision becomes golden: both judges' verdicts reading it are stale, on 3 patches.
    assert confirm_revision(rubric, STRICT, people) == 2  # type: ignore[arg-type]
    assert stale_count(run) == 3
    assert Counter(stale_results(run).values_list("strategy", flat=True)) == {
        "rubric": 3, member: 3
    }  # fmt: skip
    generation = run.generation
    run_rejudge_stale(run=run, actor=None)
    _finished(run, shared)
    assert (run.generation, stale_count(run)) == (generation + 1, 0)
    now = {r.pk: r for r in StrategyResult.objects.filter(judgment__run=run)}
    assert {pk for pk, r in first.items() if r.strategy == "s1b"} <= set(now)  # kept as they were
    again = [r for r in now.values() if r.strategy == member]
    assert {(r.rubric_revision.number, r.verdict) for r in again} == {(2, "INVALID")}  # type: ignore[union-attr]
    replaced = ReplacedResult.objects.filter(judgment__run=run)
    assert Counter(replaced.values_list("strategy", "reason")) == {
        ("rubric", ReplacedResult.Reason.RUBRIC_CHANGED): 3,
        (member, ReplacedResult.Reason.RUBRIC_CHANGED): 3,
    }
    # What flipped, by patch (the reference fix, VALID with the lenient rubric) and by member.
    summary = rejudge_summary(run)
    assert summary is not None
    assert (summary.rejudged, summary.flipped, summary.member_flipped) == (3, 1, 2)
    assert sorted((flip.patch_key, flip.strategy) for flip in summary.flips) == [
        (ref.key, "rubric"), (ref.key, member)
    ]  # fmt: skip
