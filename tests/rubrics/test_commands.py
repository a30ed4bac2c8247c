import io
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_DATASET
from tests.rubrics.bundles import bug, jsonl, label, patch

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_import_then_export_to_a_file_and_to_stdout(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(jsonl(bug(), patch(), label()))
    out = run("import_bundle", str(path), "--dataset", "My Set")
    assert "Dataset 'My Set' (my-set) created." in out
    assert "patch: 1 created, 0 updated, 0 unchanged" in out
    assert "unchanged" in run("import_bundle", str(path), "--dataset", "my-set").splitlines()[0]

    exported = tmp_path / "out.jsonl"
    run("export_bundle", "--dataset", "My Set", str(exported))
    assert exported.read_text().count("\n") == 3
    assert not (tmp_path / "out.jsonl.partial").exists()
    stdout = run("export_bundle", "--dataset", "my-set")
    assert stdout == exported.read_text()


def test_import_errors_fail_the_command_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(bug(), patch("P-1", "NOPE")))
    with pytest.raises(CommandError) as excinfo:
        run("import_bundle", str(path), "--dataset", "X")
    assert "nothing was imported" in str(excinfo.value)
    assert "line 2, field 'bug': unknown bug 'NOPE'" in str(excinfo.value)
    assert not Dataset.objects.exists()


def test_missing_file_and_unknown_dataset_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file"):
        run("import_bundle", str(tmp_path / "nope.jsonl"), "--dataset", "X")
    with pytest.raises(CommandError, match=re.escape(UNKNOWN_DATASET.format(name="ghost"))):
        run("export_bundle", "--dataset", "ghost")
