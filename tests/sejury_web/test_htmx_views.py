"""Every view that answers htmx differently says so to caches: ``Vary: HX-Request``."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
VIEW_MODULES = sorted(
    [
        *ROOT.glob("judging/**/views.py"),
        *ROOT.glob("rubrics/**/views.py"),
        ROOT / "sejury_web/views.py",
    ]
)


def _branching_views(path: Path) -> list[ast.FunctionDef]:
    """Public view functions that read ``request.htmx``."""
    return [
        node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and any(isinstance(n, ast.Attribute) and n.attr == "htmx" for n in ast.walk(node))
    ]


def test_the_check_finds_the_views_that_branch() -> None:
    names = {view.name for path in VIEW_MODULES for view in _branching_views(path)}
    assert {"run_progress", "user_password_set", "dataset_detail"} <= names


@pytest.mark.parametrize("path", VIEW_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_views_that_branch_on_htmx_vary_on_it(path: Path) -> None:
    missing = [
        view.name
        for view in _branching_views(path)
        if not any("vary_on_headers" in ast.unparse(d) for d in view.decorator_list)
    ]
    assert missing == []
