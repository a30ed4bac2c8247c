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
    """Import both SDKs now (about a second of CPU): a worker does it as it starts, so that
    its first judging tasks do not wait on it while they compete for the interpreter."""
    from . import gemini, openai_chat  # noqa: F401


def adapter_for(target: Target) -> Adapter:
    """The adapter of ``target``'s provider (the SDK is imported only when used)."""
    if target.provider == Provider.GEMINI:
        from .gemini import GeminiAdapter

        return GeminiAdapter(target)
    from .openai_chat import OpenAIChatAdapter

    return OpenAIChatAdapter(target)
