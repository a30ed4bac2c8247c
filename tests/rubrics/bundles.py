"""Helpers that write bundles for tests."""

import io
import json
from typing import Any

from tests.rubrics.factories import make_diff


def bug(key: str = "BUG-1", **fields: Any) -> dict[str, Any]:
    return {
        "kind": "bug",
        "key": key,
        "title": f"{key}: off by one",
        "description": "total() skips the first item.",
        "language": "python",
        "bug_type": "off_by_one",
        "reference_patch": make_diff(old="x = 1", new="x = 2"),
        "metadata": {"project": "calc"},
    } | fields


def patch(key: str = "P-1", bug_key: str = "BUG-1", **fields: Any) -> dict[str, Any]:
    return {
        "kind": "patch",
        "key": key,
        "bug": bug_key,
        "diff": make_diff(old="x = 1", new="x = 2"),
        "source": "agent-a",
        "tests_pass": True,
        "metadata": {},
    } | fields


def label(
    patch_key: str = "P-1", annotator: str = "rater-01", value: str = "VALID", **fields: Any
) -> dict[str, Any]:
    return {"kind": "label", "patch": patch_key, "annotator": annotator, "label": value} | fields


DRAFT_TEXT = (
    "## Root cause\n\n``total()`` starts at index 1.\n\n## Requirements\n\n"
    "A correct patch must satisfy the following requirements:\n\n"
    "1. **Sum every item:** the first item counts too.\n"
    "2. **Fix in total():** the change is in ``calc.py``.\n"
)
EDITED_TEXT = DRAFT_TEXT.replace("2. **Fix in total():** the change is in ``calc.py``.\n", "")


def revision(
    text: str = DRAFT_TEXT, author: str = "llm:gemini-2.5-pro", **fields: Any
) -> dict[str, Any]:
    return {"text": text, "author": author, "justification": ""} | fields


def edit(text: str = EDITED_TEXT, author: str = "reviewer-a", **fields: Any) -> dict[str, Any]:
    """A reviewer's revision after the draft, justified and tagged."""
    fields = {"justification": "overfits the reference fix", "themes": ["overfitting"]} | fields
    return revision(text, author, **fields)


def rubric(
    bug_key: str = "BUG-1", revisions: list[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    """A rubric record: by default an LLM draft and one reviewer's edit, not confirmed."""
    return {
        "kind": "rubric",
        "bug": bug_key,
        "variant": "templated",
        "revisions": [revision(), edit()] if revisions is None else revisions,
    } | fields


def jsonl(*records: dict[str, Any] | str) -> bytes:
    """Records as JSONL bytes; a str record is written as the raw line."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return ("\n".join(lines) + "\n").encode()


def source(*records: dict[str, Any] | str) -> io.BytesIO:
    return io.BytesIO(jsonl(*records))
