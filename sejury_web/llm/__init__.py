"""One interface to every model provider: ``complete(request) -> response``.

See ``client.py`` for what a call does, ``config.py`` for where it goes, ``offline/`` for
the heuristic that answers when no model is configured, and ``prices.py`` for what it costs.
"""

from .types import (
    OFFLINE_MARKER,
    CachePolicy,
    LLMError,
    LLMParseError,
    LLMRequest,
    LLMResponse,
    Message,
    Provider,
)

__all__ = [
    "OFFLINE_MARKER",
    "CachePolicy",
    "LLMError",
    "LLMParseError",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Provider",
    "complete",
]


def complete(request: LLMRequest) -> LLMResponse:
    """Answer ``request``; see ``sejury_web.llm.client.complete``."""
    from .client import complete as _complete

    return _complete(request)
