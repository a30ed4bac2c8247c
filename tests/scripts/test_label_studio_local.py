"""scripts/label_studio_local.py, without installing anything: what Label Studio's process
gets of the environment, the exports the tests read, and stopping what is not running."""

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings

SCRIPT = Path(settings.BASE_DIR) / "scripts" / "label_studio_local.py"


@pytest.fixture
def label_studio_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("label_studio_local", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "label_studio_local", module)
    spec.loader.exec_module(module)
    monkeypatch.setenv("SEJURY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEJURY_LABEL_STUDIO_PORT", "9")  # nothing answers on the discard port
    return module


def test_label_studio_gets_none_of_the_settings_it_would_read_from_bare_names(
    label_studio_local: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Label Studio reads LABEL_STUDIO_X, HEARTEX_X and plain X as its setting X.
    for name in ("HOST", "PORT", "DEBUG", "USERNAME", "PASSWORD", "DATABASE_URL", "SECRET_KEY"):
        monkeypatch.setenv(name, "from-the-shell")
    env = label_studio_local._environment(tmp_path / "data", {"LABEL_STUDIO_USERNAME": "a@b.c"})
    assert set(env) <= {
        *label_studio_local.PASSED_ENV,
        "LABEL_STUDIO_BASE_DATA_DIR",
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK",
        "LOG_LEVEL",
        "LABEL_STUDIO_USERNAME",
    }
    assert env["PATH"] == os.environ["PATH"]
    assert env["LABEL_STUDIO_BASE_DATA_DIR"] == str(tmp_path / "data")
    assert env["LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN"] == "true"
    assert env["LABEL_STUDIO_USERNAME"] == "a@b.c"


def test_the_exports_name_its_url_and_first_user(label_studio_local: ModuleType) -> None:
    state = {
        "pid": 1,
        "port": 8093,
        "LABEL_STUDIO_USERNAME": "lead@sejury.test",
        "LABEL_STUDIO_PASSWORD": "pw",
        "LABEL_STUDIO_USER_TOKEN": "token123",
    }
    assert label_studio_local.exports(state) == [
        "export SEJURY_LABEL_STUDIO_URL=http://127.0.0.1:8093",
        "export LABEL_STUDIO_USERNAME=lead@sejury.test",
        "export LABEL_STUDIO_PASSWORD=pw",
        "export LABEL_STUDIO_USER_TOKEN=token123",
    ]


def test_status_and_stop_of_nothing_running(
    label_studio_local: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert label_studio_local.main(["status"]) == 1
    assert label_studio_local.main(["env"]) == 1
    assert label_studio_local.main(["stop"]) == 0
    # A state left by a process that is gone is not a running Label Studio, and stop clears it.
    label_studio_local.state_path().write_text(json.dumps({"pid": 2**22 + 7, "port": 9}))
    assert label_studio_local.running() is None
    assert label_studio_local.main(["stop"]) == 0
    assert not label_studio_local.state_path().exists()
    err = capsys.readouterr().err
    assert "not running" in err
    assert capsys.readouterr().out == ""
