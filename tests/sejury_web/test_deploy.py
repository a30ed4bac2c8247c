"""Deployment settings come from the environment (issue 27 item 8): ``manage.py check
--deploy`` with the production environment that docs/operations/deploy.md gives has no
warning at all."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from django.conf import settings

DEPLOY_DOC = Path(settings.BASE_DIR) / "docs" / "operations" / "deploy.md"


def documented_environment() -> dict[str, str]:
    """The variables of the first code block under *The production environment*."""
    section = DEPLOY_DOC.read_text().split("## The production environment", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "no environment block in deploy.md"
    lines = (line.strip() for line in block.group(1).splitlines())
    pairs = (line.partition("=") for line in lines if line and not line.startswith("#"))
    return {name: value for name, _, value in pairs}


def check_deploy(environment: dict[str, str], var_dir: Path) -> subprocess.CompletedProcess[str]:
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR,
        env=base
        | environment
        | {"DJANGO_SETTINGS_MODULE": "sejury_web.settings", "SEJURY_VAR_DIR": str(var_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_documented_production_environment_passes_check_deploy(tmp_path: Path) -> None:
    environment = documented_environment()
    assert environment["SECRET_KEY"] == ""  # the document leaves it to be generated
    environment["SECRET_KEY"] = secrets.token_urlsafe(50)
    result = check_deploy(environment, tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues (0 silenced)." in result.stdout
