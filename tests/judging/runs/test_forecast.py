"""The cost forecast of a new run (``judging.runs.forecast``), checked against the prompts
counted here: the requests are made by the strategies with a recording ``ask``, their
characters summed, tokens and dollars worked out call by call with ``call_cost``; then the
doors that show it (the form, ``judge --dry-run``, the API's pre-flight) and the run page's
bill beside it."""

import dataclasses
import io
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from judging.models import JudgingRun, PatchJudgment
from judging.runs.cases import case_for, cases_bulk
from judging.runs.forecast import (
    DEFAULT_CHARS_PER_TOKEN,
    DEFAULT_OUTPUT_TOKENS,
    NOT_AN_LLM,
    Forecast,
    run_bill,
    run_forecast,
)
from judging.runs.selectors import RunProgress, run_progress
from judging.runs.services import run_create, run_plan
from judging.strategies import get_strategy
from rubrics.models import Dataset, Patch
from sejury_web.llm import LLMRequest, Provider
from sejury_web.llm.client import request_hash
from sejury_web.llm.config import llm_settings
from sejury_web.llm.models import LLMCall
from sejury_web.llm.models_table import REASONING_ALLOWANCE
from sejury_web.llm.prices import PRICES, Price, Rates, call_cost
from tests.api.helpers import TokenClient, token_for
from tests.judging.factories import bug_with_patches, make_golden
from tests.judging.helpers import Judge, Recorder
from tests.rubrics.factories import DatasetFactory
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db

MODEL = "gpt-5-mini"
# gpt-5-mini reasons at "medium" unless told: the forecast's assumed hidden tokens a call
# (an assumption of the model table, not a measurement).
MODEL_REASONING = REASONING_ALLOWANCE["medium"]
TEAM = ["s1b", "s2", "s4", "bleu"]
# The empty answers the forecast stands in for answers it cannot know (the schema's emptiest).
EMPTY = {"judge.s2.assess": {"score": 0, "reasons": [""]}}
EMPTY_PROPERTIES: dict[str, Any] = {"properties": [""]}


@pytest.fixture
def openai(settings: Settings, tmp_path: Path) -> None:
    """OpenAI with a key: no server, since a forecast sends nothing."""
    point_at(settings, tmp_path, OPENAI_API_KEY="sk-test")


@pytest.fixture
def dataset() -> Dataset:
    """Two bugs: one with two patches, one with one."""
    dataset = DatasetFactory(name="Forecast", slug="forecast")
    bug_with_patches(2, dataset=dataset, key="A")
    bug_with_patches(1, dataset=dataset, key="B")
    return dataset


@dataclasses.dataclass
class Counted:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    batch_cost: Decimal = Decimal(0)


def patches_of(dataset: Dataset) -> list[Patch]:
    return list(dataset.patches.select_related("bug").order_by("pk"))


def requests_by_strategy(
    dataset: Dataset, answers: dict[str, Any] | None = None
) -> dict[str, list[tuple[LLMRequest, str]]]:
    """Every request the team's LLM members make, each with the purpose of the unknown
    answer it was built on ("" for none), made by the strategies themselves."""
    shape = JudgingRun(dataset=dataset, context="reference")
    made: dict[str, list[tuple[LLMRequest, str]]] = {"s1b": [], "s2": [], "s4": []}
    first_of_bug: dict[int, Patch] = {}
    for patch in patches_of(dataset):
        first_of_bug.setdefault(patch.bug_id, patch)
    for patch in first_of_bug.values():
        recorder = Recorder()
        get_strategy("s4").prepare(case_for(shape, patch), recorder)
        made["s4"] += [(request, "") for request in recorder.requests]
    for patch in patches_of(dataset):
        case = case_for(shape, patch)
        for name in ("s1b", "s2"):
            recorder = Recorder({**EMPTY, **(answers or {})})
            get_strategy(name).judge(case, recorder)
            made[name] += [
                (request, "judge.s2.assess" if request.purpose == "judge.s2" else "")
                for request in recorder.requests
            ]
        recorder = Recorder()
        get_strategy("s4").judge(case, recorder, prepared=EMPTY_PROPERTIES)
        made["s4"] += [(request, "judge.s4.analyze") for request in recorder.requests]
    return made


def counted(
    requests: list[tuple[LLMRequest, str]],
    *,
    ratio: float = DEFAULT_CHARS_PER_TOKEN,
    outputs: dict[str, float] | None = None,
    model: str = MODEL,
    reasoning: float = MODEL_REASONING,
) -> Counted:
    """Calls, tokens and dollars of ``requests``, one call at a time. A default output gets
    ``reasoning`` hidden tokens on top, billed, but not part of the answer a second turn
    is built on; a measured one (``outputs``) has them inside."""
    measured = outputs or {}
    outputs = {**DEFAULT_OUTPUT_TOKENS, **measured}
    total = Counted()
    for request, built_on in requests:
        chars = sum(len(message.content) for message in request.messages)
        extra = outputs[built_on] if built_on else 0
        input_tokens = round(chars / ratio + extra)
        hidden = 0 if request.purpose in measured else reasoning
        output_tokens = round(outputs[request.purpose] + hidden)
        total.calls += 1
        total.input_tokens += input_tokens
        total.output_tokens += output_tokens
        for batch in (False, True):
            cost = call_cost(
                model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cached_tokens=0,
                batch=batch,
            )
            assert cost is not None
            if batch:
                total.batch_cost += cost
            else:
                total.cost += cost
    return total


def forecast_of(dataset: Dataset, team: list[str] = TEAM, **kwargs: Any) -> Forecast:
    arguments = {"provider": "openai", "model": MODEL, "context": "reference", **kwargs}
    return run_forecast(dataset=dataset, team=team, **arguments)


def rows(forecast: Forecast) -> dict[str, Any]:
    return {row.strategy: row for row in forecast.strategies}


def assert_matches(row: Any, expected: Counted) -> None:
    assert (row.calls, row.input_tokens, row.output_tokens) == (
        expected.calls,
        expected.input_tokens,
        expected.output_tokens,
    )
    assert abs(row.cost_usd - expected.cost) < Decimal("1e-12")
    assert abs(row.batch_cost_usd - expected.batch_cost) < Decimal("1e-12")


def test_calls_tokens_and_dollars_are_those_of_the_prompts_counted_here(
    openai: None, dataset: Dataset
) -> None:
    forecast = forecast_of(dataset)
    made = requests_by_strategy(dataset)
    by_strategy = rows(forecast)
    # s1b once a patch, s2 twice (its rethink), s4 once a patch and once a bug.
    assert [len(made[name]) for name in ("s1b", "s2", "s4")] == [3, 6, 5]
    assert by_strategy["s4"].bug_calls == 2
    for name in ("s1b", "s2", "s4"):
        assert_matches(by_strategy[name], counted(made[name]))
    assert by_strategy["bleu"].calls == 0
    assert by_strategy["bleu"].cost_usd == 0
    everything = counted([call for name in made for call in made[name]])
    assert_matches(forecast.total, everything)
    # Batch is half the ordinary price at gpt-5-mini's list prices.
    assert forecast.total.cost_usd is not None
    assert forecast.total.batch_cost_usd == forecast.total.cost_usd / 2
    assert (forecast.patches, forecast.bugs, forecast.ratio_calls) == (3, 2, 0)
    assert forecast.chars_per_token == DEFAULT_CHARS_PER_TOKEN
    assert "a default" in forecast.notes[0]
    assert not any(output.measured for output in forecast.outputs.values())


def test_a_reasoning_models_default_output_assumes_its_hidden_reasoning_and_says_so(
    openai: None, dataset: Dataset
) -> None:
    """gpt-5-mini reasons at medium unless told; gpt-4.1-mini does not reason at all."""
    plain = forecast_of(dataset, model="gpt-4.1-mini")
    reasoning = forecast_of(dataset)
    low = forecast_of(dataset, reasoning="low")

    calls = reasoning.total.calls
    assert plain.total.calls == calls
    hidden = reasoning.total.output_tokens - plain.total.output_tokens
    assert hidden == calls * REASONING_ALLOWANCE["medium"]
    assert low.total.output_tokens - plain.total.output_tokens == calls * REASONING_ALLOWANCE["low"]
    # Hidden reasoning is billed, but a second turn is built on the visible answer only.
    assert reasoning.total.input_tokens == plain.total.input_tokens
    assert any("hidden reasoning" in note and "(medium)" in note for note in reasoning.notes)
    assert not any("hidden reasoning" in note for note in plain.notes)


def test_characters_per_token_and_output_come_from_the_models_past_calls(
    openai: None, dataset: Dataset
) -> None:
    def call(purpose: str, chars: int, input_tokens: int, output_tokens: int, **kw: Any) -> None:
        LLMCall.objects.create(
            purpose=purpose,
            provider="openai",
            model=kw.get("model", MODEL),
            request_hash=f"{purpose}-{chars}-{output_tokens}",
            messages=[
                {"role": "system", "content": "s" * 100},
                {"role": "user", "content": "u" * (chars - 100)},
            ],
            status=kw.get("status", LLMCall.Status.OK),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )

    call("judge.s1b", 800, 100, 50)
    call("judge.s1b", 800, 100, 70)
    call("judge.s1b", 800, 400, 900, status=LLMCall.Status.ERROR)  # failed: not counted
    call("judge.s1b", 800, 400, 900, model="gpt-4o")  # another model: not counted
    forecast = forecast_of(dataset, ["s1b"])
    assert forecast.chars_per_token == 8.0  # 1,600 characters / 200 tokens
    assert forecast.ratio_calls == 2
    assert forecast.outputs["judge.s1b"].tokens == 60.0
    assert forecast.outputs["judge.s1b"].measured_calls == 2
    expected = counted(requests_by_strategy(dataset)["s1b"], ratio=8.0, outputs={"judge.s1b": 60})
    assert_matches(rows(forecast)["s1b"], expected)
    assert "8.00 characters per token, measured from 2 past calls" in forecast.notes[0]


def key_of(request: LLMRequest) -> str:
    sent = dataclasses.replace(request, provider=Provider.OPENAI, model=MODEL)
    return request_hash(llm_settings().target(sent), sent)


def test_answers_the_log_has_are_free_and_a_second_turn_is_built_on_the_cached_answer(
    openai: None, dataset: Dataset
) -> None:
    made = requests_by_strategy(dataset)
    s1b_first = made["s1b"][0][0]
    s2_first = made["s2"][0][0]
    answer = {"score": 55, "reasons": ["It keeps f()."]}
    for request, cached_answer in ((s1b_first, {"score": 1, "reasoning": "r"}), (s2_first, answer)):
        LLMCall.objects.create(
            purpose=request.purpose,
            provider="openai",
            model=MODEL,
            request_hash=key_of(request),
            status=LLMCall.Status.OK,
            answer=cached_answer,
        )
    forecast = forecast_of(dataset, ["s1b", "s2"])
    by_strategy = rows(forecast)
    assert (by_strategy["s1b"].calls, by_strategy["s1b"].cached_calls) == (2, 1)
    assert (by_strategy["s2"].calls, by_strategy["s2"].cached_calls) == (5, 1)
    # The first patch's rethink is the one the cached answer makes: exact, nothing added.
    with_answer = requests_by_strategy(dataset, {"judge.s2.assess": answer})["s2"]
    rethink = with_answer[1][0]
    assert rethink.purpose == "judge.s2"
    expected = counted([(rethink, ""), *made["s2"][2:]])
    assert_matches(by_strategy["s2"], expected)
    # Once the rethink is in the log too, both turns of that patch are free.
    LLMCall.objects.create(
        purpose="judge.s2",
        provider="openai",
        model=MODEL,
        request_hash=key_of(rethink),
        status=LLMCall.Status.OK,
        answer={"score": 60, "reasoning": "r"},
    )
    again = rows(forecast_of(dataset, ["s1b", "s2"]))["s2"]
    assert (again.calls, again.cached_calls) == (4, 2)


def test_an_unpriced_model_has_no_price_and_the_offline_heuristic_costs_nothing(
    openai: None, dataset: Dataset
) -> None:
    unpriced = forecast_of(dataset, ["s1b"], model="my-own-model")
    assert unpriced.total.cost_usd is None
    assert unpriced.total.batch_cost_usd is None
    assert unpriced.total.input_tokens > 0
    assert "unknown price" in unpriced.price_note
    assert unpriced.as_dict()["total"]["cost_usd"] is None
    offline = forecast_of(dataset, ["s1b", "s2"], provider="offline", model="heuristic")
    assert offline.offline
    assert offline.price_note == NOT_AN_LLM
    assert offline.total.calls == 9
    assert (offline.total.input_tokens, offline.total.cost_usd) == (0, Decimal(0))


def test_the_rubric_judge_reads_each_bugs_golden_rubric_as_a_run_would(
    openai: None, dataset: Dataset
) -> None:
    for bug in dataset.bugs.all():
        make_golden(bug)
    shape = JudgingRun(dataset=dataset, context="golden")
    patches = patches_of(dataset)
    assert cases_bulk(shape, patches) == [case_for(shape, patch) for patch in patches]
    forecast = forecast_of(dataset, ["rubric"], context="golden")
    requests = []
    for patch in patches:
        recorder = Recorder()
        get_strategy("rubric").judge(case_for(shape, patch), recorder)
        requests += [(request, "") for request in recorder.requests]
    assert_matches(rows(forecast)["rubric"], counted(requests))


def test_only_the_ready_patches_are_forecast(openai: None, dataset: Dataset) -> None:
    make_golden(dataset.bugs.get(key="B"))
    plan, forecast = run_plan(
        dataset=dataset, strategies=["rubric"], context="golden", provider="openai", model=MODEL
    )
    assert (plan.preflight.total, plan.preflight.ready) == (3, 1)
    assert (forecast.patches, forecast.bugs, forecast.total.calls) == (1, 1, 1)


def test_a_run_keeps_its_forecast(openai: None, dataset: Dataset) -> None:
    run = run_create(
        dataset=dataset,
        strategies=TEAM,
        context="reference",
        provider="openai",
        model=MODEL,
        actor=None,
    )
    kept = run.forecast
    fresh = forecast_of(dataset).as_dict()
    assert kept["total"] == fresh["total"]
    assert [row["strategy"] for row in kept["strategies"]] == TEAM
    assert kept["batch_wait"] == "usually within hours, 24 h at most"


def test_judge_dry_run_prints_the_forecast_and_creates_nothing(
    openai: None, dataset: Dataset
) -> None:
    out = io.StringIO()
    call_command(
        "judge",
        "--dataset",
        "forecast",
        "--team",
        "s1b,s2,s4",
        "--context",
        "reference",
        "--provider",
        "openai",
        "--model",
        MODEL,
        "--dry-run",
        stdout=out,
    )
    text = out.getvalue()
    forecast = forecast_of(dataset, ["s1b", "s2", "s4"]).as_dict()
    assert "nothing was sent, no run was created" in text
    total = re.search(r"^  total +(.*)$", text, re.MULTILINE)
    assert total is not None
    cells = total.group(1).split()
    assert cells[0] == f"{forecast['total']['calls']:,}"
    assert cells[2] == f"{forecast['total']['input_tokens']:,}"
    assert cells[4] == f"${forecast['total']['cost_usd']:.4f}"
    assert cells[5] == f"${forecast['total']['batch_cost_usd']:.4f}"
    assert "24 h at most" in text
    assert not JudgingRun.objects.exists()
    assert not LLMCall.objects.exists()


def test_the_forms_forecast_shows_the_table_and_starts_nothing(
    openai: None, dataset: Dataset, lead_client: Client
) -> None:
    form = {
        "dataset": "forecast",
        "strategies": ["s1b", "s2", "s4"],
        "context": "reference",
        "provider": "openai",
        "model": MODEL,
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
        "reducer": "mean",
        "forecast": "1",
    }
    response = lead_client.post(reverse("judging:run_new"), form)
    assert response.status_code == 200
    html = response.content.decode()
    forecast = forecast_of(dataset, ["s1b", "s2", "s4"]).as_dict()
    assert 'id="forecast"' in html
    total = re.search(r'data-strategy="total">(.*?)</tr>', html, re.DOTALL)
    assert total is not None
    cells = re.findall(r'<td class="num">(.*?)</td>', total.group(1))
    assert cells[0] == f"{forecast['total']['calls']:,}"
    assert f"${forecast['total']['cost_usd']:.4f}" in cells[4]
    assert f"${forecast['total']['batch_cost_usd']:.4f}" in cells[5]
    assert "usually within hours, 24 h at most" in html
    assert not JudgingRun.objects.exists()


def test_the_forms_refusal_shows_what_the_ready_patches_would_cost(
    openai: None, dataset: Dataset, lead_client: Client
) -> None:
    make_golden(dataset.bugs.get(key="B"))
    form = {
        "dataset": "forecast",
        "strategies": ["rubric"],
        "context": "golden",
        "provider": "openai",
        "model": MODEL,
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
        "reducer": "mean",
    }
    html = lead_client.post(reverse("judging:run_new"), form).content.decode()
    assert 'id="preflight"' in html
    assert 'id="forecast"' in html
    assert "1 patch of 1 bug" in html
    assert not JudgingRun.objects.exists()


def test_the_apis_preflight_says_the_forecast_and_starts_nothing(
    openai: None, dataset: Dataset, lead: User
) -> None:
    api = TokenClient(token_for(lead))
    body = {
        "dataset": "forecast",
        "team": "s1b,s2,s4",
        "context": "reference",
        "provider": "openai",
        "model": MODEL,
    }
    response = api.post("/api/v1/runs/preflight", body)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert (answer["total"], answer["ready"], answer["missing"], answer["lacks"]) == (3, 3, 0, [])
    expected = forecast_of(dataset, ["s1b", "s2", "s4"]).as_dict()
    assert answer["forecast"]["total"] == expected["total"]
    assert [row["calls"] for row in answer["forecast"]["strategies"]] == [3, 6, 5]
    assert not JudgingRun.objects.exists()
    refused = api.post("/api/v1/runs/preflight", {**body, "team": "rubric", "context": "golden"})
    assert refused.status_code == 422
    assert refused.json()["ready"] == 0
    # A run started with the same body keeps that forecast, and its record says it.
    created = api.post("/api/v1/runs", body)
    assert created.status_code == 201, created.content
    record = api.get(f"/api/v1/runs/{created.json()['id']}").json()
    assert record["forecast"]["total"] == answer["forecast"]["total"]


def progress(**figures: Any) -> RunProgress:
    base: dict[str, Any] = {
        "total": 3,
        "done": 3,
        "failed": 0,
        "pending": 0,
        "valid": 3,
        "invalid": 0,
        "provider_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": Decimal(0),
        "wall_s": 1.0,
    }
    return RunProgress(**{**base, **figures})


def test_the_bill_is_set_beside_the_forecast_at_the_price_the_run_was_judged_at() -> None:
    forecast = {
        "total": {
            "calls": 10,
            "cached_calls": 2,
            "input_tokens": 4000,
            "output_tokens": 800,
            "cost_usd": 0.02,
            "batch_cost_usd": 0.01,
        }
    }
    run = JudgingRun(status=JudgingRun.Status.FINISHED, forecast=forecast)
    spent = progress(
        provider_calls=11, input_tokens=5000, output_tokens=600, cost_usd=Decimal("0.025")
    )
    bill = run_bill(run, spent)
    assert bill is not None
    assert bill.final
    ratios = [line.ratio for line in bill.lines]
    assert ratios == [
        pytest.approx(1.1),
        pytest.approx(1.25),
        pytest.approx(0.75),
        pytest.approx(1.25),
    ]
    batched = run_bill(JudgingRun(forecast=forecast, batch=True), spent)
    assert batched is not None
    assert not batched.final
    assert batched.dollars.forecast == 0.01
    assert batched.dollars.ratio == pytest.approx(2.5)
    unknown = run_bill(run, progress(cost_usd=None))
    assert unknown is not None
    assert unknown.dollars.ratio is None
    assert run_bill(JudgingRun(forecast={}), spent) is None  # a run from before forecasts


Capture = Callable[..., Any]


def test_the_run_page_shows_the_bill_beside_the_forecast(
    dataset: Dataset, judge_now: Judge, lead_client: Client
) -> None:
    run = judge_now(dataset=dataset, strategies=["s1b", "s2"], context="reference")
    assert run.status == JudgingRun.Status.FINISHED
    assert run.judgments.filter(status=PatchJudgment.Status.DONE).count() == 3
    spent = run_progress(run)
    # The offline heuristic: every call forecast is made, none from the cache yet.
    assert run.forecast["total"]["calls"] == spent.provider_calls == 9
    html = lead_client.get(run.get_absolute_url()).content.decode()
    assert "The bill beside the forecast" in html
    calls = re.search(r'data-line="provider-calls">(.*?)</tr>', html, re.DOTALL)
    assert calls is not None
    assert re.findall(r'<td class="num[^"]*">(.*?)</td>', calls.group(1)) == ["9", "9", "1.00×"]
    # The same run again: the log answers every call, and the forecast knew it.
    again = judge_now(dataset=dataset, strategies=["s1b", "s2"], context="reference")
    assert again.forecast["total"]["calls"] == run_progress(again).provider_calls == 0
    assert again.forecast["total"]["cached_calls"] == 9


def test_a_prompt_over_the_long_prompt_threshold_is_priced_at_its_tier(
    openai: None, dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = requests_by_strategy(dataset)["s2"]
    sizes = sorted(counted([call]).input_tokens for call in made)
    threshold = (sizes[0] + sizes[-1]) // 2  # S2's rethinks are over it, its first turns not
    assert sizes[0] <= threshold < sizes[-1]
    short, long = (
        Rates(Decimal(1), Decimal(2), Decimal(0)),
        Rates(Decimal(10), Decimal(20), Decimal(0)),
    )
    tiered = Price(
        short, short.halved(cached=False), "", threshold, long, long.halved(cached=False)
    )
    monkeypatch.setitem(PRICES, MODEL, tiered)
    row = rows(forecast_of(dataset, ["s2"]))["s2"]
    assert_matches(row, counted(made))  # counted() prices call by call with call_cost


def test_a_bug_level_step_the_log_has_is_free_and_its_patches_see_its_answer(
    openai: None, dataset: Dataset
) -> None:
    analyze = requests_by_strategy(dataset)["s4"][0][0]
    assert analyze.purpose == "judge.s4.analyze"
    answer = {"properties": ["f() returns 2"]}
    LLMCall.objects.create(
        purpose=analyze.purpose,
        provider="openai",
        model=MODEL,
        request_hash=key_of(analyze),
        status=LLMCall.Status.OK,
        answer=answer,
    )
    row = rows(forecast_of(dataset, ["s4"]))["s4"]
    assert (row.calls, row.cached_calls, row.bug_calls) == (4, 1, 1)
    # Bug A's two patches are judged on the cached properties: their prompts are exact.
    shape = JudgingRun(dataset=dataset, context="reference")
    exact = []
    for patch in patches_of(dataset)[:2]:
        recorder = Recorder()
        get_strategy("s4").judge(case_for(shape, patch), recorder, prepared=answer)
        exact += [(request, "") for request in recorder.requests]
    rest = requests_by_strategy(dataset)["s4"]
    bug_b = [call for call in rest if call[0].purpose == "judge.s4.analyze"][1:]
    patch_b = [call for call in rest if call[0].purpose == "judge.s4"][2:]
    assert_matches(row, counted([*exact, *bug_b, *patch_b]))


def test_output_is_expected_from_calls_with_the_runs_reasoning_setting_where_there_are_some(
    openai: None, dataset: Dataset
) -> None:
    for n, (reasoning, output_tokens) in enumerate([("high", 500), ("high", 700), ("", 50)]):
        LLMCall.objects.create(
            purpose="judge.s1b",
            provider="openai",
            model=MODEL,
            request_hash=f"past-{n}",
            settings={"reasoning": reasoning} if reasoning else {},
            status=LLMCall.Status.OK,
            output_tokens=output_tokens,
        )

    def expected(reasoning: str) -> tuple[float, int]:
        output = forecast_of(dataset, ["s1b"], reasoning=reasoning).outputs["judge.s1b"]
        return output.tokens, output.measured_calls

    assert expected("high") == (600.0, 2)
    assert expected("") == (50.0, 1)
    assert expected("low") == (pytest.approx(1250 / 3), 3)  # none with it: every call
