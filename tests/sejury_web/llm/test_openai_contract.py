"""The chat completion bodies we send, against OpenAI's own published OpenAPI document.

``openai_openapi_chat.json`` is ``CreateChatCompletionRequest`` and ``CreateBatchRequest``
with every schema they reference, cut from ``openapi.json`` of the openai/openai-openapi
repository (the commit is in its ``$comment``; descriptions removed). The fake server
encodes what we believe OpenAI refuses; this checks the body itself against what OpenAI
publishes: every field is one the document declares, with a value its schema takes.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from sejury_web.llm.config import Target
from sejury_web.llm.providers.openai_chat import MODES, Learned, chat_body
from sejury_web.llm.types import Message, Provider

from .helpers import SCORE_SCHEMA

DOCUMENT = json.loads((Path(__file__).parent / "openai_openapi_chat.json").read_text())
MESSAGES = [Message("system", "You judge patches."), Message("user", "Is this patch right?")]


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": DOCUMENT["$defs"]})


def _declared(schema: dict[str, Any]) -> set[str]:
    """The property names a schema declares, through its ``allOf`` and ``$ref``s."""
    if "$ref" in schema:
        return _declared(DOCUMENT["$defs"][schema["$ref"].rsplit("/", 1)[1]])
    names = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        names |= _declared(part)
    return names


DECLARED = _declared(DOCUMENT["$defs"]["CreateChatCompletionRequest"])


@pytest.mark.parametrize(
    ("model", "settings"),
    [
        ("gpt-5-mini", {"reasoning": "low", "cache_group": "judge.s1b:Chart-1"}),
        ("gpt-5.4-nano", {"reasoning": "none", "max_output_tokens": 800}),
        ("o4-mini", {"reasoning": "high", "max_output_tokens": 2000}),
        ("gpt-4o-mini", {"cache_group": "judge.roles:Lang-7", "max_output_tokens": 500}),
        ("gpt-4.1", {}),
    ],
)
@pytest.mark.parametrize("mode", range(len(MODES)))
def test_every_body_we_send_openai_is_one_its_document_takes(
    model: str, settings: dict[str, Any], mode: int
) -> None:
    body = chat_body(
        Target(Provider.OPENAI, model),
        MESSAGES,
        schema=SCORE_SCHEMA,
        temperature=0.0,
        learned=Learned(mode_index=mode),
        max_output_tokens=settings.pop("max_output_tokens", None),
        **settings,
    )

    errors = [
        error.message for error in _validator("CreateChatCompletionRequest").iter_errors(body)
    ]
    assert errors == []
    assert set(body) <= DECLARED, f"not in OpenAI's document: {set(body) - DECLARED}"


def test_the_document_is_what_we_think_it_is() -> None:
    """The checks above could pass on an empty schema: make sure they bite."""
    validator = _validator("CreateChatCompletionRequest")
    body = chat_body(Target(Provider.OPENAI, "gpt-5"), MESSAGES, schema=SCORE_SCHEMA,
                     temperature=0.0, max_output_tokens=None)  # fmt: skip
    assert {"reasoning_effort", "prompt_cache_key", "max_completion_tokens"} <= DECLARED
    assert "max_output_tokens" not in DECLARED  # Gemini's name, not OpenAI's
    assert list(validator.iter_errors({**body, "reasoning_effort": "enormous"}))
    assert list(validator.iter_errors({**body, "response_format": {"type": "yaml"}}))
    assert list(validator.iter_errors({key: v for key, v in body.items() if key != "messages"}))


def test_a_batch_of_chat_completions_is_created_as_the_document_says() -> None:
    validator = _validator("CreateBatchRequest")
    good = {
        "input_file_id": "file-abc",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"sejury_batch": "17"},
    }
    assert list(validator.iter_errors(good)) == []
    assert list(validator.iter_errors({**good, "completion_window": "48h"}))
