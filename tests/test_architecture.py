"""Import rules of shared/architecture.md §6.2, checked on the source (AST)."""

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


def imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


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
    allowed = {"clustering.validation", "clustering.exceptions"}
    for path in sorted((ROOT / "service").rglob("*.py")):
        for mod in imported_modules(path):
            if mod.startswith("clustering"):
                assert mod in allowed, f"{path.name} imports {mod}"


def test_rule_checker_detects_a_violation(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("import flask\nfrom celery import Celery\n")
    assert set(imported_modules(bad)) == {"flask", "celery"}
