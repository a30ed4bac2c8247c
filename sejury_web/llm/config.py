"""Which provider, model and connection a request goes to.

Everything comes from ``settings.SEJURY_LLM`` (filled from the environment), read at call
time; a request (and so a run) may name another provider and model.
"""

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .offline import OFFLINE_MODEL
from .types import LLMRequest, Provider

DEFAULT_MODELS = {
    Provider.GEMINI: "gemini-2.5-pro",  # the judge of paper 004
    Provider.OPENAI: "gpt-4o-mini",  # the judge of paper 000
    Provider.OFFLINE: OFFLINE_MODEL,
}
# Servers such as Ollama or llama.cpp take any key; the SDK insists on one.
LOCAL_SERVER_KEY = "sk-no-key-needed"

UNKNOWN_PROVIDER = "unknown LLM provider {provider!r}: choose one of gemini, openai, offline"
MISSING_KEY = "provider {provider} needs {variable} in the environment"


@dataclass(frozen=True)
class Target:
    """A resolved destination: provider, model and how to reach it."""

    provider: Provider
    model: str
    api_key: str = ""
    base_url: str = ""
    timeout: float = 120.0
    # On this machine (the loopback) and so free, unless SEJURY_LLM_LOCAL_FREE=0 says it
    # is a tunnel or proxy to a paid service.
    local: bool = False

    @property
    def limit_key(self) -> str:
        """Calls sharing this key share the concurrency and rate limits."""
        return f"{self.provider}-{self.base_url or 'default'}"


@dataclass(frozen=True)
class LLMSettings:
    """``settings.SEJURY_LLM`` as read now (``llm_settings()``): the default provider and model,
    the keys and servers, the limits and retries. (The app's ``AppConfig`` is ``LLMConfig``.)"""

    provider: Provider
    model: str
    gemini_api_key: str
    gemini_base_url: str
    openai_api_key: str
    openai_base_url: str
    max_concurrency: int
    rpm: int
    timeout: float
    max_attempts: int
    backoff_base: float
    backoff_max: float
    retry_after_max: float
    lock_dir: Path
    local_free: bool = True
    max_output_tokens: int = 0  # applied to requests that set none; 0: no limit

    def target(self, request: LLMRequest) -> Target:
        provider = request.provider or self.provider
        if provider == Provider.OFFLINE:
            return Target(provider, OFFLINE_MODEL)
        model = request.model or (self.model if provider == self.provider else "")
        model = model or DEFAULT_MODELS[provider]
        if provider == Provider.GEMINI:
            if not self.gemini_api_key:
                raise ImproperlyConfigured(
                    MISSING_KEY.format(provider=provider, variable="GEMINI_API_KEY")
                )
            return Target(provider, model, self.gemini_api_key, self.gemini_base_url, self.timeout)
        if not (self.openai_api_key or self.openai_base_url):
            raise ImproperlyConfigured(
                MISSING_KEY.format(provider=provider, variable="OPENAI_API_KEY or OPENAI_BASE_URL")
            )
        key = self.openai_api_key or LOCAL_SERVER_KEY
        local = self.local_free and loopback(self.openai_base_url)
        return Target(provider, model, key, self.openai_base_url, self.timeout, local)


def loopback(base_url: str) -> bool:
    """Whether ``base_url`` names this machine: localhost, 127.0.0.0/8 or ::1."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def provider_parse(value: str) -> Provider:
    try:
        return Provider(value.strip().lower())
    except ValueError:
        raise ImproperlyConfigured(UNKNOWN_PROVIDER.format(provider=value)) from None


def llm_settings(**overrides: Any) -> LLMSettings:
    """The configuration now: ``settings.SEJURY_LLM`` with ``overrides`` (lower-case keys)."""
    raw: dict[str, Any] = {key.lower(): value for key, value in settings.SEJURY_LLM.items()}
    raw.update(overrides)
    if raw["provider"]:
        provider = provider_parse(str(raw["provider"]))
    elif raw["gemini_api_key"]:
        provider = Provider.GEMINI
    elif raw["openai_api_key"] or raw["openai_base_url"]:
        provider = Provider.OPENAI
    else:
        provider = Provider.OFFLINE
    return LLMSettings(
        provider=provider,
        model=str(raw["model"] or ""),
        gemini_api_key=str(raw["gemini_api_key"] or ""),
        gemini_base_url=str(raw["gemini_base_url"] or ""),
        openai_api_key=str(raw["openai_api_key"] or ""),
        openai_base_url=str(raw["openai_base_url"] or ""),
        max_concurrency=max(1, int(raw["max_concurrency"])),
        rpm=max(0, int(raw["rpm"])),
        timeout=float(raw["timeout"]),
        max_attempts=max(1, int(raw["max_attempts"])),
        backoff_base=float(raw["backoff_base"]),
        backoff_max=float(raw["backoff_max"]),
        retry_after_max=float(raw.get("retry_after_max", 300)),
        lock_dir=Path(raw["lock_dir"]),
        local_free=bool(raw.get("local_free", True)),
        max_output_tokens=max(0, int(raw.get("max_output_tokens") or 0)),
    )
