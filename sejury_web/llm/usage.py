"""What the log says of a model: where it runs, what it costs, how fast it answers.

Pages show it beside a run's provider and model, so that a reader knows whether the verdicts
came from a model on this machine (free, private, slow) or from a paid service, and how long
a call takes. The speed is measured, never assumed: the successful calls in the ``LLMCall``
log (answers from the cache are not calls and are not counted, nor are batched calls, whose
latency is their batch job's wait).
"""

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db.models import Count, Sum

from .config import llm_settings, loopback
from .models import LLMCall
from .prices import price_for
from .types import OFFLINE_MARKER, Provider


@dataclass(frozen=True)
class ModelProfile:
    provider: str
    model: str
    base_url: str  # the server the newest call went to; "" for the provider's own API
    priced: bool  # the price table knows the model
    calls: int  # successful calls in the log
    input_tokens: int
    output_tokens: int
    seconds: float  # their summed latency
    local_free: bool = True  # SEJURY_LLM_LOCAL_FREE: 0 when the loopback is a tunnel
    # Parameters the server refused for this model (its newest call's record), so not sent.
    dropped: tuple[str, ...] = ()

    @property
    def offline(self) -> bool:
        return self.provider == Provider.OFFLINE

    @property
    def local(self) -> bool:
        """Served on this machine: a server on the loopback (that is not a tunnel)."""
        return self.local_free and loopback(self.base_url)

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc if self.base_url else ""

    @property
    def seconds_per_call(self) -> float | None:
        return self.seconds / self.calls if self.calls else None

    @property
    def output_tokens_per_s(self) -> float | None:
        """Output tokens per second of a call, reading the prompt included."""
        return self.output_tokens / self.seconds if self.calls and self.seconds > 0 else None

    @property
    def cost_note(self) -> str:
        if self.offline:
            return "$0"
        if self.priced:
            return "list price (sejury_web/llm/prices.py)"
        return "$0 (runs on this machine)" if self.local else "unknown price"

    @property
    def where(self) -> str:
        if self.offline:
            return OFFLINE_MARKER
        if self.local:
            return f"local model, on this machine ({self.host})"
        return f"served by {self.host}" if self.host else f"{self.provider}'s API"

    @property
    def speed_note(self) -> str:
        per_call, per_s = self.seconds_per_call, self.output_tokens_per_s
        if self.offline or per_call is None:
            return "no call measured yet" if not self.offline else ""
        calls = f"{self.calls} call{'s' if self.calls != 1 else ''}"
        speed = f"{per_call:.1f} s a call"
        if per_s is not None:
            speed += f", {per_s:.1f} output tokens/s"
        return f"measured: {speed} (mean of {calls})"


def model_profile(provider: str, model: str, base_url: str | None = None) -> ModelProfile:
    """The profile of ``provider``/``model`` from the log; ``base_url`` defaults to the server
    its newest call went to."""
    llm = llm_settings()
    calls = LLMCall.objects.filter(provider=provider, model=model)
    if base_url is None:
        newest = calls.order_by("-id").values_list("base_url", flat=True).first()
        if newest is None and provider == Provider.OPENAI:
            newest = llm.openai_base_url  # no call yet: where the next one goes
        base_url = newest or ""
    newest_settings = (
        calls.filter(base_url=base_url).order_by("-id").values_list("settings", flat=True).first()
    )
    # A batched call's latency is its job's wait (hours), not the model's speed.
    answered = calls.filter(base_url=base_url, status=LLMCall.Status.OK)
    measured = answered.filter(settings__batch__isnull=True).aggregate(
        calls=Count("id"),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        seconds=Sum("latency_s"),
    )
    return ModelProfile(
        provider=provider,
        model=model,
        base_url=base_url,
        priced=price_for(model) is not None,
        calls=int(measured["calls"] or 0),
        input_tokens=int(measured["input_tokens"] or 0),
        output_tokens=int(measured["output_tokens"] or 0),
        seconds=float(measured["seconds"] or 0.0),
        local_free=llm.local_free,
        dropped=tuple((newest_settings or {}).get("dropped", ())),
    )
