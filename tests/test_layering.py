"""The import rule of ARCHITECTURE.md, checked on every module: dependencies point one way,
``api → judging → rubrics → sejury_web``, and no two modules import each other, directly or
through others. Imports inside functions count: they are still dependencies, only later ones.

And the layers inside a package: a ``selectors`` module never writes, and a view (a page's
``views`` module or an API operation) never queries the database but through a selector or a
service (the rules are at the end, with what they count as a write and a query).
"""

import ast
import functools
import re
from collections.abc import Iterator
from fnmatch import fnmatch
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


@functools.cache
def _tree(module: str) -> ast.Module:
    """``module`` parsed, once per process: the rules below walk the same trees."""
    path, _ = MODULES[module]
    return ast.parse(path.read_text(), filename=str(path))


def _known(name: str) -> str | None:
    """The module of ours that importing ``name`` runs (``a.b.c`` may be a name in ``a.b``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    """Every module of ours that ``module`` imports, at the top or inside a function."""
    _, is_package = MODULES[module]
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_tree(module)):
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


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's imports; parsed once, by the first test that needs them (not when the
    suite is collected, in every xdist process)."""
    return {module: imports_of(module) for module in MODULES}


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
    assert "judging.annotations.bundle" in graph()["judging.apps"]
    assert "rubrics.bundle.base" in graph()["judging.apps"]
    # sejury_web.llm.client imports its siblings relatively.
    assert "sejury_web.llm.providers" in graph()["sejury_web.llm.client"]


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(_cycles(graph)) == [["a", "b", "c"]]


def test_no_two_modules_import_each_other() -> None:
    assert list(_cycles(graph())) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module: str) -> None:
    layer = LAYERS.index(module.split(".")[0])
    upward = sorted(
        target for target in graph()[module] if LAYERS.index(target.split(".")[0]) > layer
    )
    assert upward == [], f"{module} imports a layer above it: {upward}"


def test_nothing_imports_the_api() -> None:
    """``api`` is the top: no app, and no module of ``sejury_web``, depends on it."""
    assert any(module.startswith("api.") for module in MODULES)
    importers = sorted(
        module
        for module, targets in graph().items()
        if not module.startswith("api") and any(t.split(".")[0] == "api" for t in targets)
    )
    assert importers == []


def test_no_difflib_in_application_code() -> None:
    users = sorted(
        module
        for module in MODULES
        if any(
            (isinstance(node, ast.Import) and any(a.name == "difflib" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "difflib")
            for node in ast.walk(_tree(module))
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
    for module in MODULES:
        if not module.startswith("rubrics"):
            continue
        for node in ast.walk(_tree(module)):
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


# -- Reads and writes where the layers say ---------------------------------------------------
# ``selectors`` read, ``services`` write, and a view (a page's or the API's door) reaches the
# database only through them. Both rules read the code as ``ast``; what they count:
#
# * a *write* is a call of ``save``, ``create``, ``delete``, ``bulk_create``, ``bulk_update``,
#   ``get_or_create`` or ``update_or_create`` on anything, ``update(field=…)`` with keyword
#   arguments only (``QuerySet.update``; ``dict.update(other)`` and ``set.update(items)``
#   take a positional one and are not writes), or ``add``, ``remove``, ``set`` or ``clear``
#   on an attribute (a related manager: ``campaign.annotators.add(user)``; on a bare name,
#   ``seen.add(x)``, it is a Python set's and is not a write);
# * a *query* is a write, a manager (``Model.objects``, ``_default_manager``), a method only a
#   queryset, a related manager or a model has (``filter``, ``all``, ``first``, ``latest``,
#   ``iterator``, ``select_related``, ``refresh_from_db``, …: ``dataset.campaigns.all()`` is
#   a query too), ``values(…)`` with an argument (``dict.values()`` takes none; a bare
#   ``queryset.values()`` goes unseen, and the code has none), ``get(field=…)`` with keyword
#   arguments only, ``count()`` with none (``list.count(x)`` takes one), or Django's
#   ``get_object_or_404``/``get_list_or_404``.
#
# A *door* is a module whose name matches ``DOOR_GLOBS`` (the pages' ``views``), or an ``api``
# module that declares an HTTP operation (a function decorated with ``router.get(…)``,
# ``api.post(…)``, …): the API is split by domain, and a new operations module is a door
# without this list changing.

WRITE_METHODS = frozenset(
    {"save", "create", "delete", "bulk_create", "bulk_update", "get_or_create", "update_or_create"}
)
QUERYSET_METHODS = frozenset(
    {
        "filter",
        "exclude",
        "annotate",
        "aggregate",
        "alias",
        "select_related",
        "prefetch_related",
        "order_by",
        "values_list",
        "in_bulk",
        "select_for_update",
        "defer",
        "only",
        "distinct",
        "raw",
        "exists",
        "all",
        "first",
        "last",
        "latest",
        "earliest",
        "iterator",
        "refresh_from_db",
    }
)
RELATION_WRITES = frozenset({"add", "remove", "set", "clear"})
MANAGERS = frozenset({"objects", "_default_manager"})
SHORTCUTS = frozenset({"get_object_or_404", "get_list_or_404"})
DOOR_GLOBS = ("*.views", "*.views.*")
HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete", "api_operation"})


def _writes(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if (
                name in WRITE_METHODS
                or (name == "update" and node.keywords and not node.args)
                or (name in RELATION_WRITES and isinstance(node.func.value, ast.Attribute))
            ):
                yield node


def _queries(tree: ast.AST) -> Iterator[ast.expr]:
    yield from _writes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in MANAGERS:
            yield node
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in SHORTCUTS:
                yield node
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, positional = node.func.attr, bool(node.args)
            if (
                name in QUERYSET_METHODS
                or (name == "values" and (positional or node.keywords))
                or (name == "get" and node.keywords and not positional)
                or (name == "count" and not positional and not node.keywords)
            ):
                yield node


def _declares_operations(tree: ast.Module) -> bool:
    """Whether a module registers an HTTP operation (django-ninja: ``@router.get("/…")``)."""
    return any(
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr in HTTP_METHODS
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for decorator in node.decorator_list
    )


def _is_door(module: str) -> bool:
    if any(fnmatch(module, glob) for glob in DOOR_GLOBS):
        return True
    return module.startswith("api.") and _declares_operations(_tree(module))


def _found(module: str, nodes: Iterator[ast.expr]) -> list[str]:
    """Where the nodes are, one per line: the widest expression found there."""
    widest: dict[int, str] = {}
    for node in nodes:
        text = ast.unparse(node)
        if len(text) > len(widest.get(node.lineno, "")):
            widest[node.lineno] = text
    return [f"{module}:{line} {text[:90]}" for line, text in sorted(widest.items())]


SELECTORS = sorted(m for m in MODULES if m.rpartition(".")[2] == "selectors" or ".selectors." in m)
DOORS = sorted(module for module in MODULES if _is_door(module))


def test_the_rules_find_writes_and_queries_and_leave_dicts_alone() -> None:
    code = ast.parse(
        "run.save()\nRun.objects.filter(pk=1).update(status='done')\ncounts.update(other)\n"
        "seen.update({1})\nrow.get('key')\nkeys.count('a')\nrun.judgments.count()\n"
        "dataset.imports.select_related('by')\nget_object_or_404(Run, pk=1)\n"
        "Run.objects.get_or_create(pk=1)\nrubric.revisions.get(number=2)\n"
        "campaign.annotators.add(user)\nrubric.themes.remove(theme)\n"
        "run.patches.set(patches)\ncampaign.annotators.clear()\nseen.add(key)\n"
        "wanted.remove(key)\nsettings.set('a', 1)\n"
        "dataset.campaigns.all()\nrubric.revisions.first()\nrun.judgments.last()\n"
        "rubric.revisions.latest('number')\nrubric.revisions.earliest('number')\n"
        "run.judgments.values('patch_id')\nrun.judgments.iterator()\n"
        "rubric.refresh_from_db()\nform.errors.values()\nanswer.get('content', {}).values()\n"
    )
    assert [ast.unparse(node) for node in _writes(code)] == [
        "run.save()",
        "Run.objects.filter(pk=1).update(status='done')",
        "Run.objects.get_or_create(pk=1)",
        "campaign.annotators.add(user)",
        "rubric.themes.remove(theme)",
        "run.patches.set(patches)",
        "campaign.annotators.clear()",
    ]
    queries = {ast.unparse(node) for node in _queries(code)}
    for plain in (
        "counts.update(other)",
        "seen.update({1})",
        "row.get('key')",
        "keys.count('a')",
        "seen.add(key)",
        "wanted.remove(key)",
        "settings.set('a', 1)",
        "form.errors.values()",
        "answer.get('content', {}).values()",
    ):
        assert plain not in queries
    assert {
        "run.judgments.count()",
        "dataset.imports.select_related('by')",
        "get_object_or_404(Run, pk=1)",
        "rubric.revisions.get(number=2)",
        "Run.objects",
        "campaign.annotators.add(user)",
        "dataset.campaigns.all()",
        "rubric.revisions.first()",
        "run.judgments.last()",
        "rubric.revisions.latest('number')",
        "rubric.revisions.earliest('number')",
        "run.judgments.values('patch_id')",
        "run.judgments.iterator()",
        "rubric.refresh_from_db()",
    } <= queries


def test_the_doors_are_the_views_and_the_api_operations() -> None:
    assert {"judging.runs.views", "rubrics.views", "sejury_web.views"} <= set(DOORS)
    assert any(module.startswith("api.") for module in DOORS), "no API operation found"
    assert not {"api.tokens", "judging.runs.selectors"} & set(DOORS)
    assert {"judging.runs.selectors", "rubrics.selectors"} <= set(SELECTORS)


@pytest.mark.parametrize("module", SELECTORS)
def test_selectors_only_read(module: str) -> None:
    writes = _found(module, _writes(_tree(module)))
    assert writes == [], f"a selector writes: move the write to a service: {writes}"


@pytest.mark.parametrize("module", DOORS)
def test_views_query_only_through_selectors_and_services(module: str) -> None:
    queries = _found(module, _queries(_tree(module)))
    assert queries == [], (
        f"a view queries the database itself: read through a selector, write through a "
        f"service: {queries}"
    )
