"""The fake OpenAI server's opt-in prompt cache: OpenAI's documented rule (prompts of 1,024
tokens or more, the longest prefix seen before, in steps of 128 tokens, one cache per
``prompt_cache_key``), with 4 characters a token, as the real SDK reads it."""

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.sejury_web.llm.fake_servers import OpenAIServer, token_count

# "system\n" and the system message: 8,000 characters, 2,000 tokens exactly.
SYSTEM = "s" * (8000 - len("system\n"))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(prefix_cache=True) as server:
        yield server


def usage(server: OpenAIServer, user: str, **body: Any) -> tuple[int, int]:
    client = openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0, timeout=5)
    completion = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        extra_body=body,
    )
    assert completion.usage is not None
    details = completion.usage.prompt_tokens_details
    assert details is not None
    return completion.usage.prompt_tokens, details.cached_tokens or 0


def test_a_sibling_reads_the_shared_prefix_in_steps_of_128_tokens(server: OpenAIServer) -> None:
    # The prompt: "system\n" + SYSTEM + "\nuser\n" + the user message.
    assert usage(server, "first candidate") == (2000 + token_count("\nuser\nfirst candidate"), 0)

    total, cached = usage(server, "second candidate")

    # 8,006 characters shared: 2,001 whole tokens, of which the cache serves 1,024 + 7 × 128.
    assert cached == 1920
    assert total == 2000 + token_count("\nuser\nsecond candidate")


def test_the_same_prompt_again_is_served_up_to_its_last_whole_step(server: OpenAIServer) -> None:
    usage(server, "x" * 400)

    total, cached = usage(server, "x" * 400)

    assert total == 2000 + 102  # 8,000 + 6 + 400 characters: 2,101.5 tokens, counted 2,102
    assert cached == 1024 + 8 * 128  # 2,048: the longest step within the prompt


def test_a_prompt_under_1024_tokens_is_never_cached(server: OpenAIServer) -> None:
    client = openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0, timeout=5)
    for _ in range(2):
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "u" * 4000}]
        )
        assert completion.usage is not None
        assert completion.usage.prompt_tokens == token_count("user\n" + "u" * 4000) == 1002
        assert completion.usage.prompt_tokens_details is not None
        assert completion.usage.prompt_tokens_details.cached_tokens == 0


def test_each_prompt_cache_key_is_its_own_cache(server: OpenAIServer) -> None:
    usage(server, "one", prompt_cache_key="judge.s1b:Chart-1")

    assert usage(server, "two", prompt_cache_key="judge.s1b:Chart-2")[1] == 0
    assert usage(server, "three", prompt_cache_key="judge.s1b:Chart-1")[1] == 1920
    assert usage(server, "four")[1] == 0  # no key: the keyless requests' cache, empty so far


def test_without_the_option_the_scripted_usage_is_reported() -> None:
    with OpenAIServer() as plain:
        usage(plain, "one")
        assert usage(plain, "one") == (10, 0)
