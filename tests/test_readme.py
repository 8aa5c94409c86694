"""The README's Python examples run as written (in a scratch directory holding the
repository's sample_data/ and pipelines/)."""

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _blocks(section: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def run_block(section: str, tmp_path, monkeypatch, links: tuple[str, ...]) -> dict:
    """The one Python block of README ``section``, run as written from a directory holding
    only ``links`` of the repository; its globals."""
    for name in links:
        os.symlink(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    code, = _blocks(section)
    scope: dict = {}
    exec(compile(code, f"README.md ({section.lstrip('#').strip()})", "exec"), scope)
    return scope


def test_readme_python_examples_run(ray_session, tmp_path, monkeypatch, capsys):
    scope = run_block("## Python API", tmp_path, monkeypatch, ("sample_data", "pipelines"))
    assert scope["report"]["totals"]["accounted"] and scope["report"]["train"]["steps"] == 10
    assert scope["selected"].num_rows == scope["pool_table"].num_rows
    m = scope["metrics"]  # DSIR's example moves the pool towards its target, as its comment says
    assert m["kl_reduction"] > max(0.0, m["kl_reduction_random"]), m
    assert (tmp_path / "out" / "api" / "report.html").is_file()

    # the training example reads the set-up command's shards: the same pipeline's, from above
    os.symlink(tmp_path / "out" / "yaml", tmp_path / "out" / "sample")
    train_api = [b for b in _blocks("## Training") if "load_train_config" in b]
    assert train_api, "the Training section lost its Python example"
    scope = {}
    exec(compile(train_api[0], "README.md (Training, Python API)", "exec"), scope)
    assert scope["final"]["steps"] == 20 and scope["final"]["eval_loss"]["all"] > 0
    out = capsys.readouterr().out
    assert "'accounted': True" in out


def test_ci_runs_the_readme_test_command():
    """CI (.ci/run) runs command 2 of the README's set-up, which installs what pip cannot."""
    text = (REPO / "README.md").read_text()
    setup = text[text.index("## Set-up"):text.index("\n## ", text.index("## Set-up") + 5)]
    command = re.findall(r"```bash\n(.*?)```", setup, flags=re.S)[0].strip().splitlines()[-1]
    assert command == "bash scripts/test.sh"
    assert command in (REPO / ".ci" / "run").read_text().splitlines()
    script = (REPO / "scripts" / "test.sh").read_text()
    assert "apt-get install -y -qq $missing" in script and 'missing="$missing chromium"' in script
    assert 'missing="wget"' in script and ".venv/bin/python -m pytest -q" in script
