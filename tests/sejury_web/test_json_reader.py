"""The one JSON reader: what it refuses, where it says it is, and the three imports that read
through it (bundles, SWE-bench files, Label Studio exports) refusing the same way."""

import json

import pytest

from judging.annotations.labelstudio.import_ import (
    LabelStudioImportError,
    labelstudio_import,
    users_mapping,
)
from rubrics.bundle.base import BundleImportError
from rubrics.bundle.services import bundle_import
from rubrics.models import Bug, Dataset
from rubrics.swebench.services import SwebenchImportError
from sejury_web.json_reader import (
    MAX_DEPTH,
    NUL_TEXT,
    SURROGATE_TEXT,
    TOO_DEEP,
    TOO_LARGE,
    UNSTORABLE,
    JsonDecoder,
    JsonRefused,
    json_loads,
    unstorable_text,
)
from tests.rubrics.bundles import bug, source
from tests.rubrics.swebench.helpers import FIXTURES, run_import

DEEP = "[" * 50_000 + "]" * 50_000
TOO_DEEP_TEXT = TOO_DEEP.format(limit=MAX_DEPTH)


def refusal(text: str) -> JsonRefused:
    with pytest.raises(JsonRefused) as raised:
        json_loads(text)
    return raised.value


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        (DEEP, TOO_DEEP_TEXT, 1, MAX_DEPTH + 1),
        # Deep enough to fail later, shallow enough for Python to parse: refused all the same.
        ("\n" + "[" * 500 + "]" * 500, TOO_DEEP_TEXT, 2, MAX_DEPTH + 1),
        ('{"a": "[[[[", "b": {"c": NaN}}', "NaN is not valid JSON", 1, 26),
        ("[1, -Infinity]", "-Infinity is not valid JSON", 1, 5),
        ("[1e999]", TOO_LARGE.format(value="1e999"), 1, 2),
        ("[" + "9" * 5000 + "]", "is too large", 1, 2),
    ],
)
def test_what_python_would_read_but_we_do_not_is_refused_with_its_place(
    text: str, message: str, line: int, column: int
) -> None:
    refused = refusal(text)
    assert message in refused.msg
    assert (refused.lineno, refused.colno) == (line, column)
    assert isinstance(refused, json.JSONDecodeError)  # handled wherever a syntax error is


def test_nesting_up_to_the_limit_is_read_and_strings_do_not_count() -> None:
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert json_loads(nested) == json.loads(nested)
    assert json_loads('{"diff": "' + "[" * 1000 + '"}') == {"diff": "[" * 1000}


def test_raw_decode_reads_one_value_of_a_longer_text_with_the_same_refusals() -> None:
    decoder = JsonDecoder()
    assert decoder.raw_decode("  [1] [2]", 2) == ([1], 5)
    with pytest.raises(JsonRefused) as raised:
        decoder.raw_decode("[1]\n" + DEEP, 4)
    assert (raised.value.lineno, raised.value.colno) == (2, MAX_DEPTH + 1)


def test_a_string_no_database_can_store_is_refused_at_its_escape() -> None:
    """A NUL fails PostgreSQL's insert (and a query comparing with one), an unpaired
    surrogate fails UTF-8: refused at the reader, not later at the database."""
    nul = refusal('{"note": "fine",\n "text": "a\\u0000b"}')
    assert nul.msg == UNSTORABLE.format(what=NUL_TEXT)
    assert (nul.lineno, nul.colno) == (2, 12)
    lone = refusal('["\\ud83d"]')
    assert lone.msg == UNSTORABLE.format(what=SURROGATE_TEXT)
    assert json_loads('["\\ud83d\\ude00"]') == ["\U0001f600"]  # a pair is one character
    # A caller that reports such strings itself (the bundle, by field) reads them.
    assert json_loads('{"k\\u0000": 1}', unstorable=True) == {"k\x00": 1}
    assert unstorable_text({"k\x00": 1}) == NUL_TEXT
    assert unstorable_text([["ok"], {"a": "\udc00"}]) == SURROGATE_TEXT


@pytest.mark.django_db
def test_a_nul_in_a_swebench_file_or_a_label_studio_export_is_refused_at_its_line() -> None:
    first = (FIXTURES / "preds_gpt4.jsonl").read_bytes().splitlines(keepends=True)[0]
    record = json.loads(first)
    record["model_patch"] += "\x00"
    data = first + json.dumps(record).encode() + b"\n"
    with pytest.raises(SwebenchImportError) as raised:
        run_import(predictions=("preds_gpt4.jsonl",), given={"preds_gpt4.jsonl": data})
    (error,) = raised.value.errors
    assert (error.file, error.line) == ("preds_gpt4.jsonl", 2)  # type: ignore[attr-defined]
    assert NUL_TEXT in error.message
    assert not Bug.objects.exists()
    export = json.dumps([{"id": 1, "data": {"patch_id": "p\x00"}, "annotations": []}], indent=1)
    with pytest.raises(LabelStudioImportError) as refused:
        labelstudio_import(source=export.encode(), dataset=Dataset(slug="x"), actor=None)
    assert UNSTORABLE.format(what=NUL_TEXT) in str(refused.value)
    assert "line 5," in str(refused.value)


# The three imports, 50,000 levels deep: refused with the reader's words and the line.


@pytest.mark.django_db
def test_a_bundle_line_nested_too_deeply_is_refused_on_its_line() -> None:
    with pytest.raises(BundleImportError) as raised:
        bundle_import(source=source(bug("BUG-1"), DEEP), dataset_name="Demo", actor=None)
    assert [(e.line, e.message) for e in raised.value.errors] == [
        (2, f"invalid JSON: {TOO_DEEP_TEXT} (column {MAX_DEPTH + 1})")
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("shape", ["lines", "array"])
def test_a_swebench_file_nested_too_deeply_is_refused_with_file_and_line(shape: str) -> None:
    first = (FIXTURES / "preds_gpt4.jsonl").read_bytes().splitlines(keepends=True)[0]
    if shape == "lines":
        data = first + DEEP.encode() + b"\n"
    else:
        data = b"[\n" + first.rstrip() + b",\n" + DEEP.encode() + b"\n]\n"
    with pytest.raises(SwebenchImportError) as raised:
        run_import(predictions=("preds_gpt4.jsonl",), given={"preds_gpt4.jsonl": data})
    errors = raised.value.errors
    assert [(e.file, e.line, e.column) for e in errors] == [  # type: ignore[attr-defined]
        ("preds_gpt4.jsonl", 2 if shape == "lines" else 3, MAX_DEPTH + 1)
    ]
    assert TOO_DEEP_TEXT in errors[0].message
    assert not Bug.objects.exists()


@pytest.mark.django_db
def test_a_label_studio_export_or_users_file_nested_too_deeply_is_refused_with_its_line() -> None:
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(source=("[\n" + DEEP).encode(), dataset=Dataset(slug="x"), actor=None)
    assert f"{TOO_DEEP_TEXT} (line 2, column {MAX_DEPTH})" in str(raised.value)
    with pytest.raises(LabelStudioImportError) as raised:
        users_mapping(DEEP.encode())
    assert TOO_DEEP_TEXT in str(raised.value)
