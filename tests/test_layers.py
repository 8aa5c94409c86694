"""The package's dependencies point one way (README "Layout"): the import-linter contracts
in pyproject.toml hold, no two datacurate modules import each other in a loop (imports
inside functions count), and no package ``__init__`` imports its submodules."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the datacurate under cwd, not an installed one
    return subprocess.run([LINT, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold():
    res = lint(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_an_upward_import_breaks_the_layer_contract(tmp_path):
    """The contract can fail: a copy of the package where a leaf module imports the CLI."""
    shutil.copytree(ROOT / "datacurate", tmp_path / "datacurate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    schema = tmp_path / "datacurate" / "core" / "schema.py"
    schema.write_text(schema.read_text() + "\n\ndef _upward():\n    from datacurate import cli  # noqa: F401\n")
    res = lint(tmp_path)
    assert res.returncode != 0
    assert "datacurate.core.schema is not allowed to import datacurate.cli" in res.stdout, res.stdout


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_among_datacurate_modules():
    assert cycles(grimp.build_graph("datacurate")) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from loopy import b\n")
    (pkg / "b.py").write_text("from loopy import c\n")
    (pkg / "c.py").write_text("import loopy.a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert cycles(grimp.build_graph("loopy")) == [["loopy.a", "loopy.b", "loopy.c"]]
    finally:
        sys.path.remove(str(tmp_path))


def test_package_inits_import_no_submodule_eagerly():
    for init in (ROOT / "datacurate").rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        eager = [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                 and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
        assert eager == [], f"{init.relative_to(ROOT)} imports at load time: {eager}"
