"""One Ray seam (issue 25): ``ray`` is imported in ``datacurate.engine.ray`` only, the
import contract in pyproject.toml says so and fails when a module elsewhere imports it,
and the package's ``__init__`` loads no Ray (the CLI imports the supervisor from it)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

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


def test_the_clis_sigterm_handler_survives_rays_start_and_shutdown():
    """``ray.init`` installs its own SIGTERM handlers and ``ray.shutdown`` leaves the default
    action: a run that trains after its curation died silently on SIGTERM. The seam puts the
    handler set before back (here a handler that exits 7)."""
    code = ("import os, signal, sys\n"
            "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(7))\n"
            "from datacurate.configs.pipeline import RayConfig\n"
            "from datacurate.engine.ray import cluster\n"
            "cluster.init_ray(RayConfig(num_cpus=1, object_store_memory_mb=100))\n"
            "cluster.shutdown()\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "signal.pause()\n")
    res = _python_with_private_ray(code)
    assert res.returncode == 7, (res.returncode, res.stderr[-2000:])


def test_a_map_only_run_starts_no_ray_data_and_no_torch(tmp_path):
    """What a run pays before its first page (benchmarks/README.md, ``bench_extract_run.py``):
    a pipeline of map stages runs its read tasks as plain Ray tasks (engine/ray/tasks.py), so
    the driver never imports Ray Data (nor starts its two actors and executor), and torch,
    which only ``train:`` / ``doremi:`` need, is never imported; the outputs are a run's."""
    out, pipeline = tmp_path / "out", tmp_path / "pipeline.yaml"
    pipeline.write_text(json.dumps({"input": {"path": str(ROOT / "sample_data" / "corpus" / "news.jsonl"),
                                              "chunk_bytes": 20_000},
                                    "output": str(out), "ray": {"num_cpus": 1}, "stages": [{"heuristics": {}}]}))
    code = ("import json, sys\n"
            "from datacurate.cli import main\n"
            f"rc = main(['run', {str(pipeline)!r}, '--no-report', '--quiet'])\n"
            "print(json.dumps({'rc': rc, 'ray': 'ray' in sys.modules, 'ray.data': 'ray.data' in sys.modules,\n"
            "                  'torch': 'torch' in sys.modules}))\n")
    res = _python_with_private_ray(code)
    assert res.returncode == 0, res.stderr[-3000:]
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert seen == {"rc": 0, "ray": True, "ray.data": False, "torch": False}, seen
    stats = json.loads((out / "stats.json").read_text())
    assert stats["totals"]["read_tasks"] > 1 and stats["totals"]["accounted"], stats["totals"]
    assert stats["totals"]["kept"] + stats["totals"]["rejected"] == stats["totals"]["read"] > 0


def _python_with_private_ray(code: str) -> subprocess.CompletedProcess:
    """``python -c code`` in this checkout, where a Ray it starts is private (no inherited
    cluster address, a temporary directory of its own)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    temp = tempfile.mkdtemp(prefix="rs", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    try:
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env=dict(env, RAY_AUTH_MODE="disabled", RAY_TMPDIR=temp))
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_ctrl_c_while_waiting_on_ray_tasks_is_the_clis_interrupt():
    """A real SIGINT while the driver waits in ``ray.wait`` (engine/ray/tasks.py): Ray catches
    the CLI handler's Interrupted inside its own signal check and raises a plain
    KeyboardInterrupt (a 40-line traceback with no --resume hint, before); the seam gives
    back the CLI's Interrupted, naming the work (exit 130)."""
    code = ("import os, signal, threading, time\n"
            "from datacurate.cli import _catch_interrupts\n"
            "from datacurate.configs.pipeline import RayConfig\n"
            "from datacurate.core.errors import doing\n"
            "from datacurate.engine.ray import cluster\n"
            "from datacurate.engine.ray.tasks import run_items\n"
            "def hold(table):\n"
            "    time.sleep(300)\n"
            "    return table\n"
            "cluster.init_ray(RayConfig(num_cpus=1, object_store_memory_mb=100))\n"
            "_catch_interrupts()\n"
            "threading.Timer(5, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
            "try:\n"
            "    with doing('heuristics'):\n"
            "        list(run_items(['x'], hold, {}))\n"
            "except KeyboardInterrupt as e:\n"
            "    print(type(e).__name__, getattr(e, 'during', None), getattr(e, 'exit_code', None))\n"
            "finally:\n"
            "    cluster.shutdown()\n")
    res = _python_with_private_ray(code)
    assert res.stdout.strip().splitlines()[-1] == "Interrupted heuristics 130", (res.stdout, res.stderr[-2000:])
