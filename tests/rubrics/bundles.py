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


def jsonl(*records: dict[str, Any] | str) -> bytes:
    """Records as JSONL bytes; a str record is written as the raw line."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return ("\n".join(lines) + "\n").encode()


def source(*records: dict[str, Any] | str) -> io.BytesIO:
    return io.BytesIO(jsonl(*records))
