"""What a run will cost, said before anything is sent: calls by strategy, tokens, dollars.

The forecast builds the requests the run would send, with the strategies' own prompt code:
each strategy is run on each case with an ``ask`` that sends nothing. Where a later call
depends on an earlier answer (S2's rethink, the second step of S4 and S5), the answer is the
cached one when the log has it; otherwise a placeholder stands in (the schema's emptiest
answer), and the later call's input is that prompt plus the earlier call's expected output.

- **Tokens** are characters ÷ characters per token: measured from this model's past calls
  (their messages' characters ÷ the input tokens the provider counted), else
  ``DEFAULT_CHARS_PER_TOKEN``. No tokenizer is loaded: none can be downloaded here, and a
  model's tokenizer is not always published.
- **Expected output tokens** are the mean of this model's past successful calls of the same
  purpose, else ``DEFAULT_OUTPUT_TOKENS``. Reasoning models bill their hidden reasoning as
  output: measured means include it, and a default gets the reasoning allowance of the
  run's effort (or the model's default effort) from ``sejury_web.llm.models_table``, an
  assumption the forecast states.
- **Cached answers** (an identical request that already succeeded) are free, as the run's
  ``complete`` answers them from the log: counted apart, with no tokens and no dollars.
- **Dollars** come from the price table (``sejury_web.llm.prices``) at the ordinary and the
  batch rates, without the providers' prompt-caching discount (so an upper bound on input)
  and without retries of unparsed answers. A model the table does not know has no price
  (``None``), unless it runs on this machine; the offline heuristic is not an LLM and costs $0.
"""

import dataclasses
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Avg, Count

from judging.models import JudgingRun
from judging.runs.cases import cases_bulk
from judging.runs.selectors import Preflight, RunProgress
from judging.strategies import Case, Strategy, StrategyError, get_strategy
from rubrics.models import Dataset, RubricRevision
from sejury_web.llm import OFFLINE_MARKER, LLMRequest, LLMResponse, Provider
from sejury_web.llm.client import request_hash
from sejury_web.llm.config import Target, llm_settings
from sejury_web.llm.models import LLMCall
from sejury_web.llm.models_table import reasoning_allowance
from sejury_web.llm.prices import MILLION, Price, Rates, price_for

FORECAST_VERSION = 1
DEFAULT_CHARS_PER_TOKEN = 4.0
# Expected output tokens of one call by purpose, when this model has answered none yet: the
# answers the prompts ask for (a score and a sentence or two; a rubric verdict with its
# thought and requirements; a list of properties or tests).
DEFAULT_OUTPUT_TOKENS: dict[str, int] = {
    "judge.rubric": 400,
    "judge.s1a": 80,
    "judge.s1b": 80,
    "judge.s2.assess": 150,
    "judge.s2": 80,
    "judge.s3": 80,
    "judge.s4.analyze": 200,
    "judge.s4": 80,
    "judge.s5.tests": 400,
    "judge.s5": 80,
    "judge.roles": 80,
}
DEFAULT_OUTPUT_OTHER = 200
# How many of the model's newest calls the characters-per-token ratio is measured on.
RATIO_SAMPLE = 500
# The request hashes looked up in the log per query.
LOOKUP_CHUNK = 500
# The rounds of building a case's later calls again once an earlier answer is found cached.
MAX_ROUNDS = 4
BATCH_WAIT = "usually within hours, 24 h at most"

NOT_AN_LLM = f"{OFFLINE_MARKER}: it reads no tokens and costs $0"
UNKNOWN_PRICE = "unknown price: {model} is not in the price table (sejury_web/llm/prices.py)"
LOCAL_FREE = "$0: the model runs on this machine ({base_url})"
LISTED = "list prices of {listed} (sejury_web/llm/prices.py), ordinary and batch"
RATIO_MEASURED = (
    "input tokens: the messages' characters ÷ {ratio:.2f} characters per token, measured from "
    "{calls} past call{s} of this model"
)
RATIO_DEFAULT = (
    "input tokens: the messages' characters ÷ {ratio:g} characters per token (a default: this "
    "model has no measured call yet)"
)
OUTPUT_NOTE = (
    "expected output: the mean of this model's past calls of the same purpose where measured "
    "(of those with the run's reasoning setting, when there are some), else a default per "
    "purpose (marked 'default')"
)
REASONING_NOTE = (
    "hidden reasoning, billed as output: an assumed {tokens:,} tokens a call ({effort}) on "
    "each default above, until this model's calls are measured"
)
SECOND_TURN = (
    "a call built on an earlier answer that is not cached (S2's rethink, S4's and S5's "
    "second step) is estimated as its prompt with an empty earlier answer, plus that "
    "answer's expected output tokens"
)
CACHE_NOTE = (
    "calls the log has answered before (an identical successful request) are answered from "
    "it, free: counted apart"
)
NOT_COUNTED = (
    "not counted: the providers' prompt-caching discount (so input is an upper bound) and "
    "retries of answers that do not parse"
)


@dataclass
class StrategyForecast:
    """One member of the team: the calls it would make and what they would cost."""

    strategy: str
    label: str
    uses_llm: bool
    calls: int = 0  # sent to the provider
    cached_calls: int = 0  # answered by the log, free
    bug_calls: int = 0  # of ``calls``: bug-level steps, once per bug
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = Decimal(0)
    batch_cost_usd: Decimal | None = Decimal(0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "label": self.label,
            "uses_llm": self.uses_llm,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "bug_calls": self.bug_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": _dollars(self.cost_usd),
            "batch_cost_usd": _dollars(self.batch_cost_usd),
        }


@dataclass(frozen=True)
class OutputExpectation:
    tokens: float
    measured_calls: int  # 0: the default
    # Of ``tokens``, the assumed hidden reasoning of a default: billed, but not part of the
    # answer a later call is built on. (A measured mean's reasoning is not known apart.)
    reasoning: float = 0.0

    @property
    def answer_tokens(self) -> float:
        return self.tokens - self.reasoning

    @property
    def measured(self) -> bool:
        return self.measured_calls > 0


@dataclass
class Forecast:
    """A run's forecast: per member and in total, with how each figure was made."""

    provider: str
    model: str
    patches: int
    bugs: int
    strategies: list[StrategyForecast]
    total: StrategyForecast
    chars_per_token: float
    ratio_calls: int  # past calls the ratio was measured on; 0: the default
    outputs: dict[str, OutputExpectation]
    offline: bool
    priced: bool
    price_note: str
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def batch_wait(self) -> str:
        return BATCH_WAIT

    def as_dict(self) -> dict[str, Any]:
        """The forecast as JSON values: what the run keeps (``JudgingRun.forecast``) and the
        API says."""
        return {
            "version": FORECAST_VERSION,
            "provider": self.provider,
            "model": self.model,
            "offline": self.offline,
            "priced": self.priced,
            "price_note": self.price_note,
            "patches": self.patches,
            "bugs": self.bugs,
            "strategies": [row.as_dict() for row in self.strategies],
            "total": self.total.as_dict(),
            "chars_per_token": round(self.chars_per_token, 3),
            "chars_per_token_measured_calls": self.ratio_calls,
            "expected_output_tokens": {
                purpose: {"tokens": round(e.tokens, 1), "measured_calls": e.measured_calls}
                for purpose, e in sorted(self.outputs.items())
            },
            "batch_wait": BATCH_WAIT,
            "notes": list(self.notes),
            "seconds": round(self.seconds, 3),
        }


def dollars(value: float | Decimal | None) -> str:
    """$0.0123 (four decimals: a small run costs cents), $1,234.57 from $100 on; None is
    "unknown price", as everywhere a model is missing from the price table."""
    if value is None:
        return "unknown price"
    amount = float(value)
    return f"${amount:,.2f}" if amount >= 100 else f"${amount:.4f}"


def _dollars(value: Decimal | None) -> float | None:
    return None if value is None else float(round(value, 6))


def _json(value: Any, *, sort_keys: bool = False) -> str:
    """``value`` as ``request_hash`` writes it in a cache key."""
    return json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, separators=(",", ":"))


def _placeholder(schema: dict[str, Any]) -> Any:
    """The emptiest answer ``schema`` allows: what stands in for an answer not known yet."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {name: _placeholder(sub) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [_placeholder(schema.get("items", {}))] * int(schema.get("minItems", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return {"string": "", "boolean": False}.get(str(kind))


@dataclass(slots=True)
class _Call:
    purpose: str
    chars: int
    key: str  # the request's cache key; "" when not looked up
    after: str  # the purpose of the placeholder answer it was built on; "" when exact
    bug_step: bool


@dataclass
class _Unit:
    """One strategy on one case (or, for a bug-level step, on one bug): its calls."""

    strategy: str
    case: Case
    bug_step: bool = False
    calls: list[_Call] = field(default_factory=list)
    # A call's key was not looked up yet when it was answered with a placeholder and more
    # calls followed: if the log has it, the unit is built again with the real answer.
    guessed_keys: list[str] = field(default_factory=list)


class _Forecaster:
    def __init__(self, *, provider: str, model: str, reasoning: str) -> None:
        self.provider = Provider(provider)
        self.model = model
        self.reasoning = reasoning
        self.settings = llm_settings()
        self.target: Target = self.settings.target(
            LLMRequest(
                purpose="forecast", messages=(), schema={}, provider=self.provider, model=model
            )
        )
        self.known: dict[str, Any] = {}  # key → cached answer, or None: looked up, not cached
        # Each member once: a written judge's strategy is read from the database.
        self.strategies: dict[str, Strategy] = {}
        self.to_look_up: set[str] = set()
        self.placeholders: dict[int, tuple[dict[str, Any], Any]] = {}
        self.responses: dict[int, LLMResponse] = {}
        # The constant part of each schema's key (see ``key``), and whether the fast key was
        # checked equal to ``request_hash`` for it.
        self.key_parts: dict[tuple[int, float, int | None], tuple[dict[str, Any], str, str]] = {}
        self.fast_keys = self.target.provider != Provider.OFFLINE  # its key has the inputs
        ok = LLMCall.objects.filter(
            provider=self.target.provider, model=self.target.model, status=LLMCall.Status.OK
        )
        # Only requests of a purpose the log has answered with this model can be cached:
        # no key is computed for the others.
        self.cached_purposes = set(ok.values_list("purpose", flat=True).distinct())

    def strategy(self, name: str) -> Strategy:
        found = self.strategies.get(name)
        if found is None:
            found = self.strategies[name] = get_strategy(name)
        return found

    def response(self, answer: Any) -> LLMResponse:
        """What ``ask`` answers: made once per answer (a placeholder is shared)."""
        made = self.responses.get(id(answer))
        if made is None or made.answer is not answer:
            made = LLMResponse(
                answer=answer,
                raw_text="",
                provider=self.provider,
                model=self.model,
                input_tokens=0,
                output_tokens=0,
                cached_tokens=0,
                latency_s=0.0,
                cost_usd=None,
                from_cache=False,
                call_id=0,
            )
            self.responses[id(answer)] = made
        return made

    def placeholder(self, schema: dict[str, Any]) -> Any:
        """``_placeholder(schema)``, made once per schema (the strategies' are constants) and
        shared: strategies read answers, never change them."""
        made = self.placeholders.get(id(schema))
        if made is None or made[0] is not schema:
            made = self.placeholders[id(schema)] = (schema, _placeholder(schema))
        return made[1]

    def key(self, request: LLMRequest) -> str:
        """The request's cache key, as the run's ``ask`` and ``complete`` would make it.

        ``request_hash`` canonicalises the schema and the connection again for every
        request; here they are put in JSON once per schema and only the messages each time,
        in ``request_hash``'s order. The first key of each schema is checked against
        ``request_hash`` itself: should the two ever differ, every key is made by it."""
        limit = request.max_output_tokens
        if limit is None and self.settings.max_output_tokens:
            limit = self.settings.max_output_tokens
        if not self.fast_keys:
            return self.slow_key(request, limit)
        shape = (id(request.schema), float(request.temperature), limit)
        parts = self.key_parts.get(shape)
        if parts is None or parts[0] is not request.schema:
            head = (
                f'{{"base_url":{_json(self.target.base_url)},'
                f'"max_output_tokens":{_json(limit)},"messages":'
            )
            reasoning = f'"reasoning":{_json(self.reasoning)},' if self.reasoning else ""
            tail = (
                f',"model":{_json(self.target.model)},"provider":{_json(str(self.target.provider))},'
                f'{reasoning}"schema":{_json(request.schema, sort_keys=True)},'
                f'"temperature":{_json(float(request.temperature))}}}'
            )
            parts = (request.schema, head, tail)
            self.key_parts[shape] = parts
            fast = self.fast_key(request, parts)
            if fast != self.slow_key(request, limit):
                self.fast_keys = False
                return self.slow_key(request, limit)
            return fast
        return self.fast_key(request, parts)

    @staticmethod
    def fast_key(request: LLMRequest, parts: tuple[dict[str, Any], str, str]) -> str:
        # As json.dumps(ensure_ascii=False) writes a list of [role, content], a third faster.
        messages = ",".join(
            f"[{encode_basestring(m.role)},{encode_basestring(m.content)}]"
            for m in request.messages
        )
        messages = f"[{messages}]"
        return hashlib.sha256(f"{parts[1]}{messages}{parts[2]}".encode()).hexdigest()

    def slow_key(self, request: LLMRequest, limit: int | None) -> str:
        changes: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.reasoning:
            changes["reasoning"] = self.reasoning
        if limit != request.max_output_tokens:
            changes["max_output_tokens"] = limit
        return request_hash(self.target, dataclasses.replace(request, **changes))

    def run(self, unit: _Unit, prepared: Any, after: str) -> None:
        """Build the unit's calls: run its strategy with an ``ask`` that sends nothing.

        ``after`` names the purpose of the bug-level step whose placeholder is ``prepared``
        ("" when it is the real answer). A request with an assistant turn is built on the
        answers before it (S2's rethink): on a placeholder when one of them was guessed."""
        unit.calls, unit.guessed_keys = [], []
        guessed = ""
        strategy = self.strategy(unit.strategy)

        def ask(request: LLMRequest) -> LLMResponse:
            nonlocal guessed
            chars = sum(len(message.content) for message in request.messages)
            depends = any(message.role == "assistant" for message in request.messages)
            built_on = after or (guessed if depends else "")
            key = ""
            if not built_on and request.purpose in self.cached_purposes:
                key = self.key(request)
            unit.calls.append(_Call(request.purpose, chars, key, built_on, unit.bug_step))
            answer = self.known.get(key) if key else None
            if answer is None:
                if key and key not in self.known:
                    self.to_look_up.add(key)
                    unit.guessed_keys.append(key)
                answer = self.placeholder(request.schema)
                guessed = request.purpose
            return self.response(answer)

        try:
            if unit.bug_step:
                strategy.prepare(unit.case, ask)
            else:
                strategy.judge(unit.case, ask, prepared=prepared)
        except StrategyError:
            pass  # the member fails without (more) calls; the pre-flight says why

    def look_up(self) -> set[str]:
        """Look the pending keys up in the log; return those it has answered."""
        keys, self.to_look_up = sorted(self.to_look_up), set()
        found: set[str] = set()
        for start in range(0, len(keys), LOOKUP_CHUNK):
            chunk = keys[start : start + LOOKUP_CHUNK]
            rows = LLMCall.objects.filter(request_hash__in=chunk, status=LLMCall.Status.OK)
            # The newest successful call answers, as in ``complete``.
            for key, answer in rows.order_by("id").values_list("request_hash", "answer"):
                self.known[key] = answer
                found.add(key)
            for key in chunk:
                self.known.setdefault(key, None)
        return found

    def settle(self, units: list[_Unit], prepared_for: Any) -> None:
        """Build every unit, then again those whose guessed answer the log turned out to
        have, until nothing changes."""
        todo = units
        for _ in range(MAX_ROUNDS):
            for unit in todo:
                prepared, after = prepared_for(unit)
                self.run(unit, prepared, after)
            found = self.look_up()
            todo = [u for u in todo if found.intersection(u.guessed_keys) and len(u.calls) > 1]
            if not todo:
                return


def _ratio(provider: str, model: str) -> tuple[float, int]:
    """Characters per input token of this model's newest calls, and how many; the default
    and 0 when it has none."""
    rows = (
        LLMCall.objects.filter(
            provider=provider,
            model=model,
            status=LLMCall.Status.OK,
            attempts=1,  # a corrected answer's tokens count two prompts
            input_tokens__gt=0,
        )
        .order_by("-id")
        .values_list("messages", "input_tokens")[:RATIO_SAMPLE]
    )
    chars = tokens = calls = 0
    for messages, input_tokens in rows:
        chars += sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
        tokens += input_tokens
        calls += 1
    if not tokens or not chars:
        return DEFAULT_CHARS_PER_TOKEN, 0
    return chars / tokens, calls


def _outputs(
    provider: str, model: str, purposes: list[str], reasoning: str
) -> dict[str, OutputExpectation]:
    """Each purpose's expected output tokens: the mean of this model's past calls of it with
    the run's reasoning setting (a reasoning model's hidden reasoning bills as output), else
    of all its calls of it, else the default."""
    calls = LLMCall.objects.filter(
        provider=provider,
        model=model,
        status=LLMCall.Status.OK,
        attempts=1,
        output_tokens__gt=0,
        purpose__in=purposes,
    )
    same = (
        calls.filter(settings__reasoning=reasoning)
        if reasoning
        else calls.exclude(settings__has_key="reasoning")
    )
    measured: dict[str, OutputExpectation] = {}
    for queryset in (calls, same):  # the same setting's means win
        rows = queryset.values_list("purpose").annotate(mean=Avg("output_tokens"), n=Count("id"))
        for purpose, mean, n in rows:
            measured[purpose] = OutputExpectation(float(mean), int(n))
    allowance, _ = reasoning_allowance(provider, model, reasoning)
    outputs = {}
    for purpose in purposes:
        if purpose in measured:
            outputs[purpose] = measured[purpose]
        else:
            default = DEFAULT_OUTPUT_TOKENS.get(purpose, DEFAULT_OUTPUT_OTHER) + allowance
            outputs[purpose] = OutputExpectation(float(default), 0, float(allowance))
    return outputs


def _rates(price: Price, *, long: bool, batch: bool) -> Rates:
    """The rates of a call, as ``call_cost`` picks them: ``long``, a prompt over the price's
    long-prompt threshold."""
    if long:
        rates = price.long_prompt_batch if batch else price.long_prompt
        assert rates is not None
        return rates
    return price.batch if batch else price.standard


def run_forecast(
    *,
    dataset: Dataset,
    team: Iterable[str],
    context: str,
    provider: str,
    model: str,
    patch_ids: Iterable[int] | None = None,
    preflight: Preflight | None = None,
    rubric_revision: RubricRevision | None = None,
    reasoning: str = "",
) -> Forecast:
    """The forecast of a run of ``team`` on the patches it would judge: ``patch_ids`` (None:
    every patch of ``dataset``), and of those only the ready ones when ``preflight`` found
    some missing what the team needs (the run judges only those, or does not start).

    ``provider`` and ``model`` are resolved ones (``run_check``'s). A few queries whatever
    the number of patches (the patches, the context's rubrics, the model's past calls), plus
    one per ``LOOKUP_CHUNK`` requests of purposes this model has answered before, whose
    keys are looked up in the log."""
    started = time.perf_counter()
    team = list(team)
    patches = dataset.patches.select_related("bug").order_by("bug_id", "pk")
    patches = patches.only(
        "pk", "diff", "dataset_id", "bug_id", "bug__key", "bug__title", "bug__description",
        "bug__reference_patch", "tests_pass", "tests_status", "tests_note",
    )  # fmt: skip
    if patch_ids is not None:
        patches = patches.filter(pk__in=list(patch_ids))
    if preflight is not None and preflight.missing:
        patches = patches.filter(preflight.ready_filter)
    chosen = list(patches)
    shape = JudgingRun(
        dataset=dataset, context=context, rubric_revision=rubric_revision, strategies=team
    )
    cases = cases_bulk(shape, chosen)
    first_case: dict[int, Case] = {}
    for patch, case in zip(chosen, cases, strict=True):
        first_case.setdefault(patch.bug_id, case)

    offline = provider == Provider.OFFLINE
    forecaster = _Forecaster(provider=provider, model=model, reasoning=reasoning)
    members = [forecaster.strategy(name) for name in team]
    llm_members = [s for s in members if s.uses_llm]
    bug_units = [
        _Unit(strategy.name, case, bug_step=True)
        for strategy in llm_members
        if strategy.bug_step
        for case in first_case.values()
    ]
    forecaster.settle(bug_units, lambda unit: (None, ""))
    prepared: dict[tuple[str, str], tuple[Any, str]] = {}
    for unit in bug_units:
        step = forecaster.strategy(unit.strategy)
        answer = forecaster.known.get(unit.calls[0].key) if unit.calls else None
        if answer is None:
            schema = getattr(step, "step_schema", {})
            prepared[(unit.strategy, unit.case.bug_key)] = (_placeholder(schema), step.bug_step)
        else:
            prepared[(unit.strategy, unit.case.bug_key)] = (answer, "")
    patch_units = [_Unit(strategy.name, case) for case in cases for strategy in llm_members]

    def prepared_for(unit: _Unit) -> tuple[Any, str]:
        return prepared.get((unit.strategy, unit.case.bug_key), (None, ""))

    forecaster.settle(patch_units, prepared_for)

    ratio, ratio_calls = _ratio(forecaster.target.provider, forecaster.target.model)
    purposes = {call.purpose for unit in (*bug_units, *patch_units) for call in unit.calls}
    outputs = _outputs(
        forecaster.target.provider, forecaster.target.model, sorted(purposes), reasoning
    )
    price = None if offline else price_for(forecaster.target.model)
    free = offline or (price is None and forecaster.target.local)

    rows = {s.name: StrategyForecast(s.name, s.label, s.uses_llm) for s in members}
    # Per member and tier: (input, output) tokens summed; a tier is whether the call's prompt
    # is over the price's long-prompt threshold (Gemini's Pro models), where rates change.
    sums: dict[tuple[str, bool], list[int]] = {}
    long_from = price.long_prompt_tokens if price and price.long_prompt else None
    for unit in (*bug_units, *patch_units):
        row = rows[unit.strategy]
        for call in unit.calls:
            if call.key and forecaster.known.get(call.key) is not None:
                row.cached_calls += 1
                continue
            row.calls += 1
            row.bug_calls += call.bug_step
            if offline:
                continue  # the heuristic reads no tokens
            extra = outputs[call.after].answer_tokens if call.after else 0.0
            input_tokens = round(call.chars / ratio + extra)
            output_tokens = round(outputs[call.purpose].tokens)
            row.input_tokens += input_tokens
            row.output_tokens += output_tokens
            long = long_from is not None and input_tokens > long_from
            tier = sums.setdefault((unit.strategy, long), [0, 0])
            tier[0] += input_tokens
            tier[1] += output_tokens
    for row in rows.values():
        if free or not row.uses_llm or not row.calls:
            row.cost_usd = row.batch_cost_usd = Decimal(0)
        elif price is None:
            row.cost_usd = row.batch_cost_usd = None
        else:
            costs = []
            for batch in (False, True):
                cost = Decimal(0)
                for (name, long), (input_tokens, output_tokens) in sums.items():
                    if name == row.strategy:
                        rates = _rates(price, long=long, batch=batch)
                        cost += (
                            input_tokens * rates.input + output_tokens * rates.output
                        ) / MILLION
                costs.append(cost)
            row.cost_usd, row.batch_cost_usd = costs
    total = StrategyForecast("total", "Total", any(s.uses_llm for s in members))
    for row in rows.values():
        total.calls += row.calls
        total.cached_calls += row.cached_calls
        total.bug_calls += row.bug_calls
        total.input_tokens += row.input_tokens
        total.output_tokens += row.output_tokens
        for name in ("cost_usd", "batch_cost_usd"):
            mine, theirs = getattr(total, name), getattr(row, name)
            setattr(total, name, None if mine is None or theirs is None else mine + theirs)

    if offline:
        price_note = NOT_AN_LLM
    elif price is not None:
        price_note = LISTED.format(listed=price.listed or "the table")
    elif free:
        price_note = LOCAL_FREE.format(base_url=forecaster.target.base_url)
    else:
        price_note = UNKNOWN_PRICE.format(model=forecaster.target.model)
    ratio_note = (
        RATIO_MEASURED.format(ratio=ratio, calls=ratio_calls, s="" if ratio_calls == 1 else "s")
        if ratio_calls
        else RATIO_DEFAULT.format(ratio=ratio)
    )
    notes = [ratio_note, OUTPUT_NOTE, CACHE_NOTE, NOT_COUNTED]
    allowance, effort = reasoning_allowance(
        forecaster.target.provider, forecaster.target.model, reasoning
    )
    if allowance and not offline and not all(o.measured for o in outputs.values()):
        notes.insert(2, REASONING_NOTE.format(tokens=allowance, effort=effort))
    if any(call.after for unit in patch_units for call in unit.calls):
        notes.insert(2, SECOND_TURN)
    return Forecast(
        provider=str(forecaster.target.provider),
        model=forecaster.target.model,
        patches=len(chosen),
        bugs=len(first_case),
        strategies=list(rows.values()),
        total=total,
        chars_per_token=ratio,
        ratio_calls=ratio_calls,
        outputs=outputs,
        offline=offline,
        priced=price is not None,
        price_note=price_note,
        notes=notes,
        seconds=time.perf_counter() - started,
    )


def forecast_or_none(**kwargs: Any) -> Forecast | None:
    """``run_forecast``, or None when the provider cannot be reached from here (no key): the
    pre-flight says that itself."""
    try:
        return run_forecast(**kwargs)
    except ImproperlyConfigured:
        return None


@dataclass(frozen=True)
class BillLine:
    """One figure of the bill beside its forecast; ``ratio`` is bill ÷ forecast (None when
    either is unknown or nothing was forecast)."""

    what: str
    forecast: float | int | None
    bill: float | int | None
    dollars: bool = False

    @property
    def ratio(self) -> float | None:
        if self.forecast is None or self.bill is None or not self.forecast:
            return None
        return float(self.bill) / float(self.forecast)


@dataclass(frozen=True)
class Bill:
    """What the run spent beside what its forecast said, at the price it was judged at."""

    lines: list[BillLine]
    batch: bool
    cached_calls: int  # the forecast's calls the log would answer, free
    final: bool  # the run has ended: the bill, not what it has spent so far
    forecast: dict[str, Any]

    @property
    def dollars(self) -> BillLine:
        return self.lines[-1]


def run_bill(run: JudgingRun, progress: RunProgress) -> Bill | None:
    """The run's spend (``run_progress``: provider calls, tokens, dollars, the cache's
    answers free) beside the forecast it kept at creation; None for a run without one."""
    forecast = run.forecast or {}
    total = forecast.get("total")
    if not total:
        return None
    cost = progress.cost_usd
    forecast_cost = total.get("batch_cost_usd" if run.batch else "cost_usd")
    return Bill(
        lines=[
            BillLine("Provider calls", total["calls"], progress.provider_calls),
            BillLine("Input tokens", total["input_tokens"], progress.input_tokens),
            BillLine("Output tokens", total["output_tokens"], progress.output_tokens),
            BillLine("Dollars", forecast_cost, None if cost is None else float(cost), dollars=True),
        ],
        batch=run.batch,
        cached_calls=int(total.get("cached_calls", 0)),
        final=not run.is_active,
        forecast=forecast,
    )
