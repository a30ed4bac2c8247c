"""A model's measured speed leaves batched calls out: their latency is their job's wait."""

import pytest

from sejury_web.llm.models import LLMCall
from sejury_web.llm.usage import model_profile

pytestmark = pytest.mark.django_db


def _call(latency: float, **settings: object) -> None:
    LLMCall.objects.create(
        purpose="judge.s1b", provider="openai", model="gpt-4o-mini", request_hash="h",
        status="ok", latency_s=latency, output_tokens=100, settings=settings,
    )  # fmt: skip


def test_batched_calls_do_not_count_in_the_measured_speed() -> None:
    _call(2.0, temperature=0.0)
    _call(3.0)
    _call(7200.0, temperature=0.0, batch=True)  # answered within its job's two hours
    profile = model_profile("openai", "gpt-4o-mini", "")
    assert profile.calls == 2
    assert profile.seconds == pytest.approx(5.0)
    assert profile.seconds_per_call == pytest.approx(2.5)
