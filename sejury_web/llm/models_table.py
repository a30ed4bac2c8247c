"""What each model family accepts: temperature, reasoning effort or thinking, the output limit.

Today's reasoning models refuse what older ones took: OpenAI's GPT-5 family and o-series
answer ``temperature=0`` with a 400 ("Unsupported value: 'temperature' does not support 0
with this model. Only the default (1) value is supported."), and each family takes its own
words for how hard to think. The adapters ask this table what to send, so the first call is
already right; a 400 naming a parameter the table did not foresee (a new model, a proxy) is
still handled by the adapter, which drops the parameter, asks again and remembers.

A request's ``reasoning`` is one string for every provider: an effort word (``minimal``,
``low``, ``medium``, ``high`` …) or a thinking budget in tokens (``2048``). Each family says
which of the two it takes and which values; ``reasoning_check`` refuses the rest before a
run starts, with the values the model does take.

Sources (read 2026-11): platform.openai.com/docs/guides/reasoning and the ``openai`` SDK's
``ReasoningEffort`` type; ai.google.dev/gemini-api/docs/thinking and the ``google-genai``
SDK's ``ThinkingConfig`` (which says that from Gemini 3.5 on a thinking budget is an error).
"""

import re
from dataclasses import dataclass
from enum import StrEnum

from .types import Provider


class Thinking(StrEnum):
    NONE = ""  # the model takes no reasoning setting
    EFFORT = "effort"  # OpenAI's reasoning_effort: a word
    BUDGET = "budget"  # Gemini 2.5's thinking_budget: tokens (or a word mapped to tokens)
    LEVEL = "level"  # Gemini 3's thinking_level: a word (or, before 3.5, a budget)
    ANY = "any"  # an OpenAI-compatible server: whatever word it is given, as reasoning_effort


# Google's own mapping of effort words to Gemini 2.5 budgets (its OpenAI-compatible API).
EFFORT_BUDGETS = {"none": 0, "minimal": 0, "low": 1024, "medium": 8192, "high": 24576}


@dataclass(frozen=True)
class Family:
    provider: Provider
    name: str  # as shown: "gpt-5", "o-series", "gemini-2.5-pro"
    pattern: re.Pattern[str]  # matches the model names of the family
    temperature: bool  # sends the request's temperature (False: the model's default only)
    thinking: Thinking
    choices: tuple[str, ...] = ()  # the effort words or levels it takes
    budget: tuple[int, int] | None = None  # the thinking budgets it takes, inclusive
    budget_off: bool = False  # a budget of 0 switches thinking off
    budget_too: bool = False  # a LEVEL family that still takes a budget instead
    output_limit: str = "max_completion_tokens"  # the output-token parameter's name
    note: str = ""  # why, for the docs and errors
    # What the model does when the request sets nothing: an effort word or level ("medium"),
    # "dynamic" (Gemini 2.5 decides per request), "" for a model that does not reason.
    default_effort: str = ""

    def matches(self, model: str) -> bool:
        return self.pattern.fullmatch(model.removeprefix("models/")) is not None


def _family(provider: Provider, name: str, pattern: str, **kw: object) -> Family:
    return Family(provider, name, re.compile(pattern), **kw)  # type: ignore[arg-type]


SNAPSHOT = r"(-\d{4}-\d{2}-\d{2}|-\d{3}|-latest|-preview(-\d{2}-\d{4})?)?"
OA = Provider.OPENAI
G = Provider.GEMINI

FAMILIES: tuple[Family, ...] = (
    # OpenAI. Reasoning models take only the default temperature (1) and refuse max_tokens.
    _family(OA, "gpt-5-chat", r"gpt-5(\.\d+)?-chat" + SNAPSHOT, temperature=False,
            thinking=Thinking.NONE, note="the chat variant: no reasoning setting"),
    _family(OA, "gpt-5.2 and later", r"gpt-5\.([2-9]|\d{2,})(-(mini|nano|pro|codex))?" + SNAPSHOT,
            temperature=False, thinking=Thinking.EFFORT,
            choices=("none", "low", "medium", "high", "xhigh"), default_effort="none"),
    _family(OA, "gpt-5.1", r"gpt-5\.1(-(mini|nano|codex))?" + SNAPSHOT, temperature=False,
            thinking=Thinking.EFFORT, choices=("none", "low", "medium", "high"),
            default_effort="none"),
    _family(OA, "gpt-5", r"gpt-5(-(mini|nano|pro|codex))?" + SNAPSHOT, temperature=False,
            thinking=Thinking.EFFORT, choices=("minimal", "low", "medium", "high"),
            default_effort="medium"),
    _family(OA, "o-series", r"o[1-9](-(mini|pro|deep-research))?" + SNAPSHOT, temperature=False,
            thinking=Thinking.EFFORT, choices=("low", "medium", "high"), default_effort="medium"),
    _family(OA, "gpt-4.1 / gpt-4o", r"gpt-4(\.1|o)(-(mini|nano))?" + SNAPSHOT, temperature=True,
            thinking=Thinking.NONE, note="not a reasoning model"),
    # Gemini. 2.5 thinks within a budget; 3 at a level. Google recommends leaving Gemini 3's
    # temperature at its default of 1.0 ("lower values may cause looping or degraded
    # performance"), so it is not sent.
    _family(G, "gemini-2.5-pro", r"gemini-2\.5-pro" + SNAPSHOT, temperature=True,
            thinking=Thinking.BUDGET, budget=(128, 32768), output_limit="max_output_tokens",
            note="thinks always: no budget of 0", default_effort="dynamic"),
    _family(G, "gemini-2.5-flash-lite", r"gemini-2\.5-flash-lite" + SNAPSHOT, temperature=True,
            thinking=Thinking.BUDGET, budget=(512, 24576), budget_off=True,
            output_limit="max_output_tokens", default_effort="none"),
    _family(G, "gemini-2.5-flash", r"gemini-2\.5-flash" + SNAPSHOT, temperature=True,
            thinking=Thinking.BUDGET, budget=(1, 24576), budget_off=True,
            output_limit="max_output_tokens", default_effort="dynamic"),
    _family(G, "gemini-3 pro", r"gemini-3-pro" + SNAPSHOT, temperature=False,
            thinking=Thinking.LEVEL, choices=("low", "high"), budget=(128, 32768),
            budget_too=True, output_limit="max_output_tokens", default_effort="high"),
    _family(G, "gemini-3.1 pro", r"gemini-3\.[1-4]-pro" + SNAPSHOT, temperature=False,
            thinking=Thinking.LEVEL, choices=("low", "medium", "high"), budget=(128, 32768),
            budget_too=True, output_limit="max_output_tokens", default_effort="high"),
    _family(G, "gemini-3 flash", r"gemini-3(\.[0-4])?-flash(-lite)?" + SNAPSHOT,
            temperature=False, thinking=Thinking.LEVEL,
            choices=("minimal", "low", "medium", "high"), budget=(0, 24576), budget_too=True,
            output_limit="max_output_tokens", default_effort="high"),
    _family(G, "gemini-3.5 and later", r"gemini-(3\.[5-9]|[4-9](\.\d+)?)-.*", temperature=False,
            thinking=Thinking.LEVEL, choices=("minimal", "low", "medium", "high"),
            output_limit="max_output_tokens", note="takes thinking levels only, not budgets",
            default_effort="high"),
    _family(G, "gemini-2.0", r"gemini-2\.0-.*", temperature=True, thinking=Thinking.NONE,
            output_limit="max_output_tokens", note="not a thinking model"),
)  # fmt: skip

# A model the table does not know, on each provider. A Gemini model takes either form; an
# OpenAI-compatible server (vLLM, Ollama, llama.cpp, a proxy) everything, and refuses what it
# refuses with a 400 that the adapter learns from.
UNKNOWN_GEMINI = Family(
    G, "other Gemini", re.compile(".*"), temperature=True, thinking=Thinking.ANY,
    output_limit="max_output_tokens",
)  # fmt: skip
UNKNOWN_OPENAI = Family(
    OA, "other OpenAI-compatible", re.compile(".*"), temperature=True, thinking=Thinking.ANY,
    output_limit="max_tokens",
)  # fmt: skip

NOT_REASONING = "{model} takes no reasoning setting ({family}: {note})"
BAD_EFFORT = "{model} takes a reasoning effort of {choices}, not {value!r}"
BAD_LEVEL = "{model} takes a thinking level of {choices}{budget}, not {value!r}"
BAD_BUDGET = "{model} takes a thinking budget of {lo}–{hi} tokens{off}, not {value}"
NOT_A_BUDGET = "{model} takes an effort word ({choices}), not a number of tokens"
BAD_VALUE = "a reasoning setting is a word (low, high …) or a number of tokens, not {value!r}"


def family_for(provider: Provider | str, model: str) -> Family:
    """The family of ``model``: by its name, whichever server serves it (a proxy or a fake
    serving ``gpt-5-mini`` is taken at its word); the provider's unknown family otherwise."""
    provider = Provider(provider)
    for family in FAMILIES:
        if family.provider == provider and family.matches(model):
            return family
    return UNKNOWN_GEMINI if provider == G else UNKNOWN_OPENAI


@dataclass(frozen=True)
class ReasoningParameter:
    """How a request's ``reasoning`` goes on the wire; at most one field is set."""

    effort: str = ""  # OpenAI reasoning_effort
    budget: int | None = None  # Gemini thinking_budget
    level: str = ""  # Gemini thinking_level


def reasoning_check(provider: Provider | str, model: str, value: str) -> str:
    """``value`` normalised ("" when empty); raises ``ValueError`` saying what the model takes."""
    value = value.strip().lower()
    if not value:
        return ""
    reasoning_parameter(provider, model, value)
    return value


def reasoning_parameter(provider: Provider | str, model: str, value: str) -> ReasoningParameter:
    """What to send for ``reasoning`` = ``value`` to ``model``; ``ValueError`` if it takes none."""
    value = value.strip().lower()
    if not value:
        return ReasoningParameter()
    family = family_for(provider, model)
    budget = _budget(value)
    if budget is None and not re.fullmatch(r"[a-z]+", value):
        raise ValueError(BAD_VALUE.format(value=value))
    choices = ", ".join(family.choices)
    if family.thinking == Thinking.NONE:
        raise ValueError(NOT_REASONING.format(model=model, family=family.name, note=family.note))
    if family.thinking == Thinking.ANY:
        if Provider(provider) == G:
            return ReasoningParameter(budget=budget) if budget is not None else (
                ReasoningParameter(level=value)
            )  # fmt: skip
        if budget is not None:
            raise ValueError(NOT_A_BUDGET.format(model=model, choices="low, medium, high …"))
        return ReasoningParameter(effort=value)
    if family.thinking == Thinking.EFFORT:
        if budget is not None:
            raise ValueError(NOT_A_BUDGET.format(model=model, choices=choices))
        if value not in family.choices:
            raise ValueError(BAD_EFFORT.format(model=model, choices=choices, value=value))
        return ReasoningParameter(effort=value)
    if family.thinking == Thinking.LEVEL:
        if budget is not None and family.budget_too:
            return ReasoningParameter(budget=_budget_checked(family, model, budget))
        if budget is None and value in family.choices:
            return ReasoningParameter(level=value)
        also = ""
        if family.budget_too and family.budget:
            also = f", or a thinking budget of {family.budget[0]}–{family.budget[1]} tokens"
        raise ValueError(BAD_LEVEL.format(model=model, choices=choices, budget=also, value=value))
    # A budget family: a number, or an effort word mapped as Google maps it.
    if budget is None:
        if value not in EFFORT_BUDGETS:
            words = ", ".join(EFFORT_BUDGETS)
            raise ValueError(BAD_EFFORT.format(model=model, choices=words, value=value))
        budget = EFFORT_BUDGETS[value]
        if budget == 0 and not family.budget_off and family.budget:
            budget = family.budget[0]  # as little as this model thinks
        elif family.budget and budget > family.budget[1]:
            budget = family.budget[1]
    return ReasoningParameter(budget=_budget_checked(family, model, budget))


# Hidden reasoning tokens one call is assumed to spend at each effort, before any call of the
# model has been measured (the forecast's default; a measured mean replaces it). Providers
# publish no such figure: these are this table's assumptions, stated where they are used.
# "dynamic" is Gemini 2.5 deciding per request, assumed to think as much as "medium".
REASONING_ALLOWANCE = {
    "none": 0,
    "minimal": 32,
    "low": 256,
    "medium": 1024,
    "dynamic": 1024,
    "high": 3072,
    "xhigh": 6144,
}


def reasoning_allowance(provider: Provider | str, model: str, reasoning: str) -> tuple[int, str]:
    """The hidden reasoning tokens a call is assumed to spend, and the effort assumed: the
    request's setting, else the family's default. (0, "") for a model that does not reason or
    that the table does not know; a thinking budget is its own bound, -1 is "dynamic"."""
    family = family_for(provider, model)
    if family.thinking in (Thinking.NONE, Thinking.ANY):
        return 0, ""
    effort = reasoning.strip().lower() or family.default_effort
    budget = _budget(effort)
    if budget is not None and budget >= 0:
        return budget, f"a thinking budget of {budget}"
    if budget is not None:
        effort = "dynamic"
    return REASONING_ALLOWANCE.get(effort, 0), effort


def _budget(value: str) -> int | None:
    return int(value) if re.fullmatch(r"-?\d{1,7}", value) else None


def _budget_checked(family: Family, model: str, budget: int) -> int:
    if budget == -1:  # "dynamic": the model decides, as it does by default
        return budget
    if budget == 0 and family.budget_off:
        return budget
    if family.budget and family.budget[0] <= budget <= family.budget[1]:
        return budget
    lo, hi = family.budget or (0, 0)
    off = ", 0 (off)" if family.budget_off else ""
    raise ValueError(BAD_BUDGET.format(model=model, lo=lo, hi=hi, off=off + " or -1 (dynamic)",
                                       value=budget))  # fmt: skip
