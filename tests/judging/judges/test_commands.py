"""``judge_define`` and ``judge_export``: a judge shared between installations as JSON, the
round trip exact, a bad file refused with why and nothing written."""

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.judges.services import STARTERS
from judging.models import JudgeVersion, WrittenJudge

pytestmark = pytest.mark.django_db

NON_FUNCTIONAL: dict[str, Any] = {
    "name": "nonfunctional",
    "title": "Non-functional quality",
    "template": "Rate it.\n{{ bug }}\n{{ candidate_patch }}",
    "kind": "dimensions",
    "dimensions": [
        {"name": "maintainability", "low": 1, "high": 5, "description": "easy to change"},
        {"name": "security", "low": 1, "high": 5, "description": "opens no hole"},
    ],
    "overall": "security",
    "note": "from the template",
}


def _define(path: Path, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("judge_define", "--file", str(path), *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue().strip()


def _export(name: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("judge_export", name, stdout=out)
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def test_a_judge_goes_out_as_json_and_comes_back_the_same(tmp_path: Path, lead: User) -> None:
    source = tmp_path / "judge.json"
    source.write_text(json.dumps(NON_FUNCTIONAL))
    assert _define(source, "--author", lead.username) == ("nonfunctional@1", "")
    exported = _export("nonfunctional")
    assert {k: v for k, v in exported.items() if k != "exported_from"} == NON_FUNCTIONAL
    assert exported["exported_from"]["version"] == 1
    assert exported["exported_from"]["author"] == lead.username

    # Defined again from its own export: the same version, nothing new.
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps(exported))
    assert _define(copy) == ("nonfunctional@1", "nonfunctional@1 already says this: no new version")
    # As another installation's judge: the same content under its name.
    copy.write_text(json.dumps({**exported, "name": "quality"}))
    assert _define(copy)[0] == "quality@1"
    again = _export("quality@1")
    assert {k: again[k] for k in NON_FUNCTIONAL if k != "name"} == {
        k: v for k, v in NON_FUNCTIONAL.items() if k != "name"
    }
    # A change is a new version; the old one is still exported as it was.
    copy.write_text(json.dumps({**NON_FUNCTIONAL, "overall": ""}))
    assert _define(copy)[0] == "nonfunctional@2"
    assert _export("nonfunctional@1")["overall"] == "security"
    assert _export("nonfunctional")["overall"] == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
        ('{"name": "a", "name": "b"}', "field 'name' appears twice"),
        ("[]", "a judge's definition is a JSON object"),
        (
            json.dumps({**NON_FUNCTIONAL, "template": "{{ bug }}\n{{ diff }}"}),
            "template: unknown block 'diff' at line 2, column 1",
        ),
        (json.dumps({**NON_FUNCTIONAL, "dimensions": []}), "dimensions: an answer of kind"),
    ],
)
def test_a_bad_file_is_refused_with_why_and_nothing_is_written(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CommandError) as raised:
        _define(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)
    assert not WrittenJudge.objects.exists()
    assert not JudgeVersion.objects.exists()


def test_the_commands_name_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot be read"):
        _define(tmp_path / "none.json")
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(NON_FUNCTIONAL))
    with pytest.raises(CommandError, match="no user is named 'ghost'"):
        _define(path, "--author", "ghost")
    with pytest.raises(CommandError, match="no written judge is named 'nonfunctional'"):
        _export("nonfunctional")
    _define(path)
    with pytest.raises(CommandError, match="has no version 3; its versions are 1 to 1"):
        _export("nonfunctional@3")


@pytest.mark.parametrize("name", ["minimalism", "nonfunctional"])
def test_the_starter_judges_are_files_judge_define_reads(name: str) -> None:
    path = STARTERS / f"{name}.json"
    assert _define(path) == (f"{name}@1", "")
    version = JudgeVersion.objects.get()
    assert version.kind == {"minimalism": "verdict", "nonfunctional": "dimensions"}[name]
    if name == "nonfunctional":
        assert [(d["name"], d["low"], d["high"]) for d in version.dimensions] == [
            ("maintainability", 1, 5),
            ("performance", 1, 5),
            ("security", 1, 5),
        ]
