"""Import rules of shared/architecture.md §6.2, checked on the source (AST).

Two kinds of rule: which packages a package may not import (``FORBIDDEN``), and, inside a package,
its layers (``LAYERS``): a module imports only modules of its own layer or of a layer below, and
the import graph (imports inside functions included) has no circle.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "clustering": {"flask", "flask_smorest", "celery", "redis", "marshmallow", "kombu",
                   "schemas", "workers", "service", "bench", "scripts"},
    "schemas": {"flask", "flask_smorest", "celery", "redis", "clustering", "workers", "service"},
    "workers": {"flask", "flask_smorest", "service", "schemas"},
    "service": {"celery", "workers.tasks", "workers.session_tasks", "workers.registry", "bench"},
    "bench": {"service", "workers"},
    # the client installs on its own (client/pyproject.toml): it speaks HTTP only
    "client": {"service", "workers", "schemas", "clustering", "bench", "scripts", "flask", "celery", "redis",
               "marshmallow"},
}

#: The clustering modules the web process may import: none of them imports an estimator.
SERVICE_CLUSTERING = {"clustering.validation", "clustering.exceptions", "clustering.cards", "clustering.feasibility"}

#: Each package's layers, top first. A module may import its own layer and the layers below it;
#: "*" is every module of the package not named in another layer.
LAYERS = {
    "workers": [
        # tasks on top: what the worker process runs, and its Celery app
        {"workers.celery_app", "workers.tasks", "workers.session_tasks", "workers.integrations.tasks"},
        # dispatch and liveness: sending tasks, recovering a lost worker's work
        {"workers.liveness", "workers.submit", "workers.fair"},
        # records in Redis
        {"workers.store", "workers.session_store", "workers.dataset_store", "workers.tracking",
         "workers.annotator_store", "workers.tenancy", "workers.upload_store", "workers.matrix_files",
         "workers.integrations", "workers.integrations.label_studio"},
        # below the records: the broker's configuration and producer, record encoding, settings, helpers
        {"workers.broker", "workers.records", "workers.session_scripts", "workers.stats", "workers.config",
         "workers.fernet_keys", "workers.webhook_signing",
         "workers.callbacks", "workers.crowd", "workers.registry", "workers.projection", "workers"},
    ],
    "clustering": [
        {"*"},  # the methods (estimators and their private modules) and the package's public names
        {"clustering.cards", "clustering.feasibility"},
        {"clustering._relative"},
        {"clustering.validation", "clustering._params"},
        {"clustering.exceptions"},
    ],
}


def imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package, root=ROOT):
    """``{module: {modules of package it imports}}``, every import statement counted (inside functions too).

    ``from .x import y`` counts as an import of ``x.y`` when that is a module of the package, else of ``x``.
    """
    paths = sorted((root / package).rglob("*.py"))
    modules = {module_name(p, root): p for p in paths}
    graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in modules:  # a name inside a module: the module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    deps.add(t)
        graph[name] = deps
    return graph


def find_cycle(graph):
    """One circle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def layer_violations(graph, layers):
    """``"a imports b (a layer above)"`` for every import upward; modules in no layer are errors too."""
    named = set().union(*layers)
    rank = {}
    for i, layer in enumerate(layers):
        for m in layer:
            rank[m] = i
    bad = []
    for m in graph:
        if m not in rank and "*" not in named:
            bad.append(f"{m} is in no layer")
    index = {m: rank.get(m, rank.get("*")) for m in graph}
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            if index[m] is not None and index[d] is not None and index[d] < index[m]:
                bad.append(f"{m} imports {d} (a layer above)")
    return bad


def _violations(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for mod in imported_modules(path):
            for rule in FORBIDDEN[package]:
                if mod == rule or mod.startswith(rule + "."):
                    bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_rules(package):
    assert _violations(package) == []


def test_service_imports_only_estimator_free_clustering_modules():
    for path in sorted((ROOT / "service").rglob("*.py")):
        for mod in imported_modules(path):
            if mod.startswith("clustering"):
                assert mod in SERVICE_CLUSTERING, f"{path.name} imports {mod}"


def test_estimator_free_clustering_modules_import_no_estimator():
    """What the service may import reaches, through every import, only the modules below the methods."""
    graph = import_graph("clustering")
    below = set().union(*LAYERS["clustering"][1:])
    seen, todo = set(), list(SERVICE_CLUSTERING)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    assert seen <= below, seen - below


def test_service_names_no_method():
    from clustering.cards import CARDS

    words = set(CARDS) | {c.estimator.rpartition(":")[2] for c in CARDS.values()}
    for path in sorted((ROOT / "service").rglob("*.py")):
        text = path.read_text()
        named = sorted(w for w in words if f'"{w}"' in text or f"'{w}'" in text or f" {w}(" in text)
        assert not named, f"{path.name} names {named}"


#: Modules left out of the circle check: ``service/__init__.py`` (the app factory, which registers every
#: blueprint) and the blueprints, which take ``get_store`` from it, import each other.
NOT_IN_CIRCLE_CHECK = {"service"}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_graph_has_no_circle(package):
    graph = {m: deps - NOT_IN_CIRCLE_CHECK for m, deps in import_graph(package).items() if m not in NOT_IN_CIRCLE_CHECK}
    assert find_cycle(graph) is None


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_modules_import_only_their_layer_and_below(package):
    assert layer_violations(import_graph(package), LAYERS[package]) == []


def test_rule_checker_detects_a_violation(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("import flask\nfrom celery import Celery\n")
    assert set(imported_modules(bad)) == {"flask", "celery"}


def test_graph_checker_detects_a_planted_circle_and_an_upward_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from .sub import top  # inside a function: counted\n")
    (pkg / "sub" / "top.py").write_text("from ..mid import g\n")
    (pkg / "mid.py").write_text("import pkg.low\ng = 1\n")
    graph = import_graph("pkg", root=tmp_path)
    assert graph["pkg.low"] == {"pkg.sub.top"} and graph["pkg.sub.top"] == {"pkg.mid"}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"pkg.low", "pkg.mid", "pkg.sub.top"}
    layers = [{"pkg.sub.top"}, {"pkg.mid"}, {"pkg.low", "pkg", "pkg.sub"}]
    assert layer_violations(graph, layers) == ["pkg.low imports pkg.sub.top (a layer above)"]
    assert layer_violations(graph, [{"pkg.mid"}]) != []  # modules in no layer
    (pkg / "low.py").write_text("x = 1\n")
    assert find_cycle(import_graph("pkg", root=tmp_path)) is None
