"""Adapters from the layer's request to each provider's SDK.

An adapter sends one request and either returns a ``Completion`` or raises a
``ProviderError`` that says whether trying again could help (both in ``base``). Retrying,
waiting, limits, parsing and logging belong to ``sejury_web.llm.client``, the same for every
provider; the SDKs' own retries are switched off so that every attempt is seen and recorded.
"""

from ..config import Target
from ..types import Provider
from .base import Adapter


def sdks_preload() -> None:
    """Import the SDK of each provider this machine has credentials for (about half a second
    of CPU each): a worker does it as it starts, so that its first judging tasks do not wait
    on it while they compete for the interpreter. A provider without a key or server cannot
    be called (``LLMSettings.target``), so its SDK is never needed; with neither, the worker
    answers offline and imports none."""
    from ..config import llm_settings

    configured = llm_settings()
    if configured.gemini_api_key:
        from . import gemini  # noqa: F401
    if configured.openai_api_key or configured.openai_base_url:
        from . import openai_chat  # noqa: F401


def adapter_for(target: Target) -> Adapter:
    """The adapter of ``target``'s provider (the SDK is imported only when used)."""
    if target.provider == Provider.GEMINI:
        from .gemini import GeminiAdapter

        return GeminiAdapter(target)
    from .openai_chat import OpenAIChatAdapter

    return OpenAIChatAdapter(target)
