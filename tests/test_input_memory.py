"""One huge value costs at most 3 × the file's size in memory before it is refused, in every
input shape (issue 27 item 8): a bundle line, SWE-bench instances and predictions as JSON
Lines, a JSON array and an object keyed by instance id, a Label Studio export's note.

Measured with tracemalloc (every Python object the import allocates, above what was held
when it started); ``bench/input_memory.py`` measures the same shapes at 60 MB as a process's
peak resident memory."""

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judging.annotations.labelstudio.import_ import LabelStudioImportError, labelstudio_import
from rubrics.bundle.base import BundleImportError
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset
from rubrics.swebench.services import NamedFile, SwebenchImportError, swebench_import
from tests.helpers import DEMO_BUNDLE

pytestmark = pytest.mark.django_db

SIZE = 8_000_000  # characters of the huge value: far over every field's limit
FACTOR = 3.0
DIFF_HEAD = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+"


def huge_diff() -> str:
    return DIFF_HEAD + "x" * SIZE


def peak_above_start(call: Callable[[], object]) -> int:
    """The most memory ``call`` held at once above what was held when it started, bytes."""
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - start


def refused(call: Callable[[], object], error: type[Exception]) -> Callable[[], str]:
    def run() -> str:
        with pytest.raises(error) as raised:
            call()
        return str(raised.value)

    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[Any, bool], Path]:
    """Writes a value to a file, as one JSON document or as one JSON line."""

    def written(value: Any, line: bool = False) -> Path:
        path = tmp_path / "input.json"
        path.write_text(json.dumps(value) + ("\n" if line else ""), encoding="utf-8")
        return path

    return written


def check(path: Path, call: Callable[[], object]) -> None:
    size = path.stat().st_size
    peak = peak_above_start(call)
    assert peak < FACTOR * size, f"{peak / size:.1f} × the file's size"


def test_a_bundle_line(write: Callable[[Any, bool], Path]) -> None:
    path = write({"kind": "patch", "key": "P1", "bug": "B1", "diff": huge_diff()}, True)

    def run() -> None:
        with path.open("rb") as source:
            bundle_import(source=source, dataset_name="memory", actor=None)

    check(path, refused(run, BundleImportError))


PREDICTION = {"instance_id": "demo__demo-1", "model_name_or_path": "model"}
INSTANCE = {"instance_id": "demo__demo-1", "repo": "demo/demo", "base_commit": "0" * 40}


@pytest.mark.parametrize(
    ("kind", "value", "line"),
    [
        ("predictions", PREDICTION | {"model_patch": "DIFF"}, True),
        ("predictions", {"demo__demo-1": PREDICTION | {"model_patch": "DIFF"}}, False),
        ("instances", [INSTANCE | {"problem_statement": "DIFF", "patch": "PATCH"}], False),
    ],
    ids=["predictions as JSON Lines", "predictions by instance", "instances as an array"],
)
def test_swebench_files(
    write: Callable[[Any, bool], Path], kind: str, value: Any, line: bool
) -> None:
    text = json.dumps(value).replace('"DIFF"', json.dumps(huge_diff()))
    text = text.replace('"PATCH"', json.dumps(DIFF_HEAD + "b"))
    path = write(None, line)
    path.write_text(text + ("\n" if line else ""), encoding="utf-8")

    def run() -> None:
        with path.open("rb") as stream:
            named = NamedFile(path.name, stream)
            swebench_import(
                instances=named if kind == "instances" else None,
                predictions=[named] if kind == "predictions" else [],
                results=[],
                dataset_name="memory",
                actor=None,
            )

    check(path, refused(run, SwebenchImportError))


def test_a_label_studio_note(write: Callable[[Any, bool], Path]) -> None:
    with DEMO_BUNDLE.open("rb") as source:
        bundle_import(source=source, dataset_name="demo", actor=None)
    dataset = Dataset.objects.get(name="demo")
    patch = dataset.patches.first()
    assert patch is not None
    result = [
        {"from_name": "label", "type": "choices", "value": {"choices": ["VALID"]}},
        {"from_name": "note", "type": "textarea", "value": {"text": ["x" * SIZE]}},
    ]
    task = {
        "id": 1,
        "data": {"sejury_patch_id": patch.pk, "sejury_dataset": dataset.slug},
        "annotations": [{"completed_by": {"username": "rater-01"}, "result": result}],
    }
    path = write([task], False)

    def run() -> None:
        with path.open("rb") as source:
            labelstudio_import(source=source, dataset=dataset, actor=None)

    check(path, refused(run, LabelStudioImportError))
