"""Turning a model's text into an answer: JSON, an object, valid against the schema. Or not.

Nothing here repairs or guesses: text that is not the JSON object the schema asks for is
rejected with a message precise enough to send back to the model.
"""

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .types import JSONSchema

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

NOT_JSON = "the answer is not JSON ({error})"
NOT_AN_OBJECT = "the answer is JSON but not an object"
EMPTY = "the answer is empty"
SCHEMA_MISMATCH = "the answer does not match the schema at {path}: {message}"

# Chat models without structured output often wrap the object in a Markdown code fence,
# and small ones put a sentence before or after it ("Here is the JSON:"). One fenced block is
# taken as the answer; two or more are ambiguous and are not chosen between.
FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
FENCED_BLOCK = re.compile(r"(?:^|\n)```[a-zA-Z]*[ \t]*\n(.*?)\n?```(?=\s*(?:\n|$))", re.DOTALL)


class AnswerInvalid(ValueError):
    pass


def _loads(text: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise AnswerInvalid(EMPTY)
    fenced = FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    elif not stripped.startswith(("{", "[")):
        blocks = FENCED_BLOCK.findall(stripped)
        if len(blocks) == 1:
            stripped = blocks[0].strip()
    try:
        return json.loads(stripped, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise AnswerInvalid(NOT_JSON.format(error=error)) from None


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which slip past any minimum/maximum: not JSON.
    raise AnswerInvalid(NOT_JSON.format(error=f"{name} is not a JSON number"))


def answer_parse(text: str, schema: JSONSchema) -> dict[str, Any]:
    """The JSON object in ``text``, valid against ``schema``; ``AnswerInvalid`` otherwise."""
    value = _loads(text)
    if not isinstance(value, dict):
        raise AnswerInvalid(NOT_AN_OBJECT)
    schema_check(value, schema)
    return value


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> "Draft202012Validator":
    # Imported here: jsonschema is 80 ms of every process's start (django.setup() reaches this
    # module through the tasks), and only a process that checks an answer needs it.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def schema_check(value: Any, schema: JSONSchema) -> None:
    from jsonschema.exceptions import best_match

    validator = _validator(json.dumps(schema, sort_keys=True))
    error = best_match(validator.iter_errors(value))
    if error is not None:
        path = "/".join(str(part) for part in error.absolute_path) or "the top level"
        raise AnswerInvalid(SCHEMA_MISMATCH.format(path=path, message=error.message))


def schema_instruction(schema: JSONSchema) -> str:
    """For servers without structured output: the schema, spelled out in the prompt."""
    return (
        "Answer with a single JSON object and nothing else (no prose, no code fence). "
        "It must match this JSON Schema:\n" + json.dumps(schema, indent=1, sort_keys=True)
    )


def correction(error: str, schema: JSONSchema) -> str:
    """The follow-up turn after an answer that could not be used."""
    return (
        f"Your previous answer could not be used: {error}. Reply again with only the JSON "
        "object, matching this JSON Schema exactly:\n" + json.dumps(schema, sort_keys=True)
    )


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured output accepts ``schema`` (closed objects only)."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            properties = schema.get("properties", {})
            if schema.get("additionalProperties", True) is not False:
                return False
            if set(schema.get("required", [])) != set(properties):
                return False
        return all(strict_compatible(value) for value in schema.values())
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    return True
