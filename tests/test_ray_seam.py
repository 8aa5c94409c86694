"""One Ray seam (issue 25): ``ray`` is imported in ``datacurate.engine.ray`` only, the
import contract in pyproject.toml says so and fails when a module elsewhere imports it,
and the package's ``__init__`` loads no Ray (the CLI imports the supervisor from it)."""

import re
import shutil
import subprocess
import sys

from tests.test_layers import ROOT, lint


def test_ray_is_imported_in_engine_ray_only():
    found = {str(p.relative_to(ROOT)) for p in (ROOT / "datacurate").rglob("*.py")
             if re.search(r"^\s*(import ray\b|from ray\b)", p.read_text(), flags=re.M)}
    assert found and all(f.startswith("datacurate/engine/ray/") for f in found), found


def test_a_ray_import_elsewhere_breaks_the_ray_contract(tmp_path):
    shutil.copytree(ROOT / "datacurate", tmp_path / "datacurate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    runner = tmp_path / "datacurate" / "engine" / "runner.py"
    runner.write_text(runner.read_text() + "\n\ndef _ray():\n    import ray.data  # noqa: F401\n")
    res = lint(tmp_path)
    assert "Ray is imported in datacurate.engine.ray only BROKEN" in res.stdout, res.stdout
    assert "datacurate.engine.runner -> ray" in res.stdout, res.stdout


def test_the_cli_and_the_engine_load_no_ray():
    code = ("import sys, datacurate.cli, datacurate.engine.runner, datacurate.engine.ray.supervise; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
