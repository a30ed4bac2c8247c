"""Where a request goes, and what it costs."""

import os
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pytest_django.fixtures import Settings

from sejury_web.llm import Provider
from sejury_web.llm.config import llm_settings
from sejury_web.llm.offline import OFFLINE_MODEL
from sejury_web.llm.prices import call_cost, price_for

from .helpers import score_request

NO_KEYS = {"PROVIDER": "", "MODEL": "", "GEMINI_API_KEY": "", "OPENAI_API_KEY": ""}


@pytest.fixture
def no_keys(settings: Settings) -> Settings:
    settings.SEJURY_LLM = {**settings.SEJURY_LLM, **NO_KEYS, "OPENAI_BASE_URL": ""}
    return settings


def test_with_no_key_the_provider_is_offline(no_keys: Settings) -> None:
    target = llm_settings().target(score_request())

    assert (target.provider, target.model) == (Provider.OFFLINE, OFFLINE_MODEL)


@pytest.mark.parametrize(
    ("environment", "provider", "model"),
    [
        ({"GEMINI_API_KEY": "g"}, Provider.GEMINI, "gemini-2.5-pro"),
        ({"OPENAI_API_KEY": "o"}, Provider.OPENAI, "gpt-4o-mini"),
        ({"OPENAI_BASE_URL": "http://gpu:8000/v1"}, Provider.OPENAI, "gpt-4o-mini"),
        ({"OPENAI_API_KEY": "o", "MODEL": "gpt-4.1"}, Provider.OPENAI, "gpt-4.1"),
        ({"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "o", "PROVIDER": "openai"}, "openai", None),
    ],
)
def test_a_key_chooses_the_provider_and_its_default_model(
    no_keys: Settings,
    environment: dict[str, str],
    provider: Provider,
    model: str | None,
) -> None:
    no_keys.SEJURY_LLM = {**no_keys.SEJURY_LLM, **environment}

    target = llm_settings().target(score_request())

    assert target.provider == provider
    assert target.model == (model or "gpt-4o-mini")


def test_a_run_overrides_provider_and_model(no_keys: Settings) -> None:
    no_keys.SEJURY_LLM = {**no_keys.SEJURY_LLM, "GEMINI_API_KEY": "g", "MODEL": "gemini-2.5-flash"}

    same = llm_settings().target(score_request(model="gemini-2.0-flash"))
    offline = llm_settings().target(score_request(provider=Provider.OFFLINE, model="gpt-4o"))

    assert same.model == "gemini-2.0-flash"
    assert (offline.provider, offline.model) == (Provider.OFFLINE, OFFLINE_MODEL)


def test_a_named_provider_without_its_key_is_a_clear_error(no_keys: Settings) -> None:
    no_keys.SEJURY_LLM = {**no_keys.SEJURY_LLM, "PROVIDER": "gemini"}

    with pytest.raises(ImproperlyConfigured, match="gemini needs GEMINI_API_KEY"):
        llm_settings().target(score_request())


def test_an_unknown_provider_is_a_clear_error(no_keys: Settings) -> None:
    no_keys.SEJURY_LLM = {**no_keys.SEJURY_LLM, "PROVIDER": "claude"}

    with pytest.raises(ImproperlyConfigured, match="unknown LLM provider 'claude'"):
        llm_settings()


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ],
)
def test_snapshots_cost_what_their_family_costs(model: str, family: str) -> None:
    assert price_for(model) == price_for(family)
    assert price_for(model) is not None


@pytest.mark.parametrize("model", ["gpt-4o-audio-preview", "qwen2.5-coder:32b", "llama3", ""])
def test_unknown_models_cost_unknown(model: str) -> None:
    assert call_cost(model, input_tokens=1000, output_tokens=1000, cached_tokens=0) is None


def test_gemini_pro_long_prompts_cost_the_long_context_rate() -> None:
    # 200,000 prompt tokens: $1.25/M → $0.25; 1,000 output at $10/M → $0.01
    short = call_cost("gemini-2.5-pro", input_tokens=200_000, output_tokens=1000, cached_tokens=0)
    # 200,001: every token at $2.50/M and $15/M → $0.5000025 + $0.015
    long = call_cost("gemini-2.5-pro", input_tokens=200_001, output_tokens=1000, cached_tokens=0)

    assert short == Decimal("0.26")
    assert long == Decimal("0.5150025")


def test_a_worker_preloads_only_the_sdks_it_has_credentials_for() -> None:
    """A worker configured for OpenAI does not spend its start importing Gemini's SDK."""
    script = (
        "import sys, django; django.setup()\n"
        "from sejury_web.llm.providers import sdks_preload\n"
        "assert 'openai' not in sys.modules and 'google.genai' not in sys.modules\n"
        "sdks_preload()\n"
        "print('openai' in sys.modules, 'google.genai' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "OPENAI_"))}
    env |= {
        "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
        "DEBUG": "1",
        "SEJURY_LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.split() == ["True", "False"]
