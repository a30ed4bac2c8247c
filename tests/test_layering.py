"""The import rule of ARCHITECTURE.md, checked on every module: dependencies point one way,
``api → judging → rubrics → sejury_web``, and no two modules import each other, directly or
through others. Imports inside functions count: they are still dependencies, only later ones.
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("sejury_web", "rubrics", "judging", "api")  # each may import only the ones before it


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module of ours that importing ``name`` runs (``a.b.c`` may be a name in ``a.b``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """Every module of ours that ``module`` imports, at the top or inside a function."""
    path, is_package = MODULES[module]
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            # ``from a import b`` imports module ``a.b`` when there is one, else a name of ``a``.
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(known for name in names if (known := _known(name)))
    found.discard(module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                yield from visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


def test_the_walk_sees_imports_inside_functions_and_relative_ones() -> None:
    # judging.apps registers the label kind from ready(), inside a function.
    assert "judging.annotations.bundle" in GRAPH["judging.apps"]
    assert "rubrics.bundle.base" in GRAPH["judging.apps"]
    # sejury_web.llm.client imports its siblings relatively.
    assert "sejury_web.llm.providers" in GRAPH["sejury_web.llm.client"]


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(_cycles(graph)) == [["a", "b", "c"]]


def test_no_two_modules_import_each_other() -> None:
    assert list(_cycles(GRAPH)) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module: str) -> None:
    layer = LAYERS.index(module.split(".")[0])
    upward = sorted(
        target for target in GRAPH[module] if LAYERS.index(target.split(".")[0]) > layer
    )
    assert upward == [], f"{module} imports a layer above it: {upward}"


def test_nothing_imports_the_api() -> None:
    """``api`` is the top: no app, and no module of ``sejury_web``, depends on it."""
    assert any(module.startswith("api.") for module in MODULES)
    importers = sorted(
        module
        for module, targets in GRAPH.items()
        if not module.startswith("api") and any(t.split(".")[0] == "api" for t in targets)
    )
    assert importers == []


def test_no_difflib_in_application_code() -> None:
    users = sorted(
        module
        for module, (path, _) in MODULES.items()
        if any(
            (isinstance(node, ast.Import) and any(a.name == "difflib" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "difflib")
            for node in ast.walk(ast.parse(path.read_text()))
        )
    )
    assert users == [], "use the Levenshtein package's opcodes/editops instead"


def _judging_relations_on_rubrics_models() -> set[str]:
    """The names by which a rubrics model reaches judging rows (``patch.annotations``)."""
    from django.apps import apps

    names = set()
    for model in apps.get_app_config("judging").get_models():
        for field in model._meta.get_fields():
            remote = getattr(field, "related_model", None)
            if field.is_relation and remote and remote._meta.app_label == "rubrics":
                related_name = field.remote_field.related_name  # type: ignore[union-attr]
                if related_name and related_name != "+":
                    names.add(related_name)
    return names


def test_rubrics_never_reads_a_judging_relation() -> None:
    relations = _judging_relations_on_rubrics_models()
    assert {"annotations", "judgments"} <= relations
    readers = []
    for module, (path, _) in MODULES.items():
        if not module.startswith("rubrics"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in relations:
                readers.append(f"{module}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                lookups = set(node.value.split("__")) if " " not in node.value else set()
                readers.extend(
                    f"{module}:{node.lineno} {node.value!r}" for _ in lookups & relations
                )
    assert readers == [], "rubrics reads judging's rows; ask judging's LabelSource instead"


def test_the_llm_layer_names_no_domain_purpose() -> None:
    """``sejury_web.llm`` answers any purpose and knows none: each offline rule is registered
    from the app that asks (``offline_rule``), so no purpose an app registers may appear in
    the layer's source, in code, docstring or comment."""
    from sejury_web.llm.offline import offline_purposes

    purposes = offline_purposes()
    assert len(purposes) >= 10, "the apps register their offline rules from ready()"
    named = re.compile(
        "|".join(rf"(?<![\w.]){re.escape(purpose)}(?!\w|\.\w)" for purpose in purposes)
    )
    found: list[str] = []
    for module, (path, _) in MODULES.items():
        if not module.startswith("sejury_web.llm"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            found.extend(f"{module}:{number} {m.group()!r}" for m in named.finditer(line))
    assert found == [], "register the offline rule from the app whose prompt asks"
