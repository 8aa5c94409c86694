"""Object storage end to end, against a real S3-compatible server on 127.0.0.1
(tests/s3.py): the sample pipeline reading from and writing to it gives the bytes the
local run gives; a tiny training run streams its shards from it and resumes from a
checkpoint stored there; bad credentials, a missing bucket, no permission and a dead
endpoint each end in one line, before anything is written."""

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
import zstandard

from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from tests import s3

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "sample_data" / "corpus"
TIMINGS = ("wall", "elapsed", "config_sha256")  # the config names other input paths


def _lines(path: Path, n: int) -> list[bytes]:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    elif path.name.endswith(".zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    return [line + b"\n" for line in raw.split(b"\n") if line.strip()][:n]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    """A slice of the sample corpus in every input format: plain JSONL (cut into ranged
    read tasks by a small chunk_bytes), .gz, .zst, and Parquet of several row groups."""
    d = tmp_path_factory.mktemp("corpus")
    (d / "news.jsonl").write_bytes(b"".join(_lines(CORPUS / "news.jsonl", 80)))
    (d / "web" / "noise.jsonl").parent.mkdir()
    (d / "web" / "noise.jsonl").write_bytes(b"".join(_lines(CORPUS / "web_noise.jsonl", 40)))
    (d / "fiction.jsonl.gz").write_bytes(gzip.compress(b"".join(_lines(CORPUS / "fiction.jsonl.gz", 60))))
    (d / "code.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"".join(_lines(CORPUS / "code.jsonl.zst", 30))))
    rows = [orjson.loads(line) for line in _lines(CORPUS / "learned.jsonl", 60)]
    pq.write_table(pa.Table.from_pylist(rows), d / "learned.parquet", row_group_size=20)
    return d


def _config(tmp: Path, inp: str, out: str, target: str):
    raw = yaml.safe_load((REPO / "pipelines" / "sample.yaml").read_text())
    raw.pop("train")
    raw["input"] = {"path": inp, "chunk_bytes": 64 << 10}
    raw["output"] = out
    for entry in raw["stages"]:
        if "dsir" in entry:
            entry["dsir"]["target"] = {"path": target}
    path = tmp / f"pipeline-{abs(hash(out))}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(path, ["ray.progress=false", "ray.num_cpus=2"])


@pytest.fixture(scope="module")
def runs(ray_session, s3_server, small_corpus, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    local_out = tmp / "local"
    local = run_pipeline(_config(tmp, str(small_corpus), str(local_out), str(REPO / "sample_data" / "target")),
                         report=False)
    s3.make_bucket("data")
    s3.upload_dir(small_corpus, "s3://data/corpus")
    s3.upload_dir(REPO / "sample_data" / "target", "s3://data/target")
    cfg = _config(tmp, "s3://data/corpus", "s3://data/out", "s3://data/target")
    cfg.ray.small_input_docs = 0  # the distributed global phases (Ray Data reads S3 parts), not the one-task path
    remote = run_pipeline(cfg, report=False)
    return local, local_out, remote, tmp


def _dsir_index() -> int:
    stages = yaml.safe_load((REPO / "pipelines" / "sample.yaml").read_text())["stages"]
    return next(i for i, entry in enumerate(stages) if "dsir" in entry)


def _flat(obj, paths: tuple[str, ...], key: str = "") -> dict:
    """stats.json as {dotted key: value}, without timings, the run's own location as OUT."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not (k in TIMINGS or k.endswith(("seconds", "_s", "per_second"))):
                out.update(_flat(v, paths, f"{key}.{k}"))
        return out
    if isinstance(obj, list):
        return {k: v for i, x in enumerate(obj) for k, v in _flat(x, paths, f"{key}[{i}]").items()}
    if isinstance(obj, str):
        for p in paths:
            obj = obj.replace(p, "OUT")
    return {key: obj}


def _diff(a: dict, b: dict) -> dict:
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def test_pipeline_on_s3_matches_local(runs):
    local, local_out, remote, tmp = runs
    keys = [k for k in s3.keys("s3://data/out") if not k.endswith("/")]  # pyarrow leaves directory markers
    names = {k.removeprefix("out/") for k in keys}
    local_names = {str(p.relative_to(local_out)) for p in local_out.rglob("*") if p.is_file()}
    assert names == local_names and "stats.json" in names and "kept" in {n.split("/")[0] for n in names}
    assert not [k for k in keys if "tmp" in k or "_work" in k or "staging" in k]
    for part in sorted(n for n in names if n.endswith(".parquet")):
        got = pq.read_table(pa.BufferReader(s3.get(f"s3://data/out/{part}")))
        want = pq.read_table(local_out / part)
        assert got.equals(want), part
    for name in sorted(n for n in names if n.startswith("shards/") and not n.endswith(".json")):
        assert s3.get(f"s3://data/out/{name}") == (local_out / name).read_bytes(), name
    stats = json.loads(s3.get("s3://data/out/stats.json"))
    assert stats == remote
    assert not _diff(_flat(stats, ("s3://data/out",)), _flat(local, (str(local_out),)))
    manifest = json.loads(s3.get("s3://data/out/shards/manifest.json"))
    local_manifest = json.loads((local_out / "shards" / "manifest.json").read_text())
    # the manifest records the run's configuration: only where the inputs were differs
    assert set(_diff(_flat(manifest, ("s3://data/out",)), _flat(local_manifest, (str(local_out),)))) == {
        ".source_run.config.input.path[0]", f".source_run.config.stages[{_dsir_index()}].dsir.target.path[0]",
        ".source_run.config.ray.small_input_docs"}
    assert local["totals"]["read"] == 270 and local["totals"]["kept"] > 0


def test_stats_and_report_read_an_s3_output(runs, capsys):
    from datacurate.cli import main

    local, local_out, remote, tmp = runs
    assert main(["stats", "s3://data/out"]) == 0
    printed = capsys.readouterr().out
    assert f"{remote['totals']['read']:,}" in printed and "no report.html yet: datacurate report s3://data/out" in printed
    assert main(["report", "s3://data/out"]) == 0
    assert "written: s3://data/out/report.html" in capsys.readouterr().out
    page = s3.get("s3://data/out/report.html").decode()
    assert "datacurate run report" in page and "s3://data/out" in page and "<svg" in page
    from datacurate.report import write_report

    write_report(str(local_out), path=str(tmp / "local-report.html"))
    local_page = (tmp / "local-report.html").read_text()
    # the same sections and figures (timings differ between the runs)
    parts = lambda html: re.findall(r"<(?:h2|figcaption)>(.*?)</", html)
    assert parts(page) == parts(local_page) and len(parts(page)) > 5
    assert f"{remote['totals']['kept']:,}" in page


@pytest.fixture
def error_input(s3_server):
    s3.make_bucket("data")
    s3.client().put_object(Bucket="data", Key="errin/docs.jsonl", Body=b'{"text": "One short document."}\n')
    return "s3://data/errin"


def _run_cli(capsys, inp: str, out: str) -> tuple[int, list[str]]:
    from datacurate.cli import main

    rc = main(["run", str(REPO / "pipelines" / "langid_only.yaml"), "--input", inp, "--output", out, "--quiet"])
    return rc, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize("who", ["bad_key", "no_permission"])
def test_refused_credentials_fail_in_one_line(who, error_input, capsys, monkeypatch):
    outsider = s3.iam_user(f"outsider-{os.getpid()}", allow_s3=False) if who == "no_permission" else {
        "AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000", "AWS_SECRET_ACCESS_KEY": "wrong"}
    s3.set_auth(True)  # from here on the server checks every request's key and permissions
    try:
        for k, v in outsider.items():
            monkeypatch.setenv(k, v)
        rc, err = _run_cli(capsys, error_input, "s3://data/errout")
    finally:
        s3.set_auth(False)
    assert rc == 2 and len(err) == 1, err
    assert ("credentials were refused" if who == "bad_key" else "access denied") in err[0], err
    assert s3.keys("s3://data/errout") == []


def test_no_credentials_at_all_fail_in_one_line(error_input, capsys, monkeypatch, tmp_path):
    """No key, no profile, no ~/.aws files, no instance metadata: the requests go unsigned
    and the server refuses them; the message names the missing credentials."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3.set_auth(True)
    try:
        rc, err = _run_cli(capsys, error_input, "s3://data/errout")
    finally:
        s3.set_auth(False)
    assert rc == 2 and len(err) == 1 and "no S3 credentials found" in err[0], err
    assert s3.keys("s3://data/errout") == []


def test_missing_bucket_fails_in_one_line(error_input, small_corpus, capsys):
    rc, err = _run_cli(capsys, "s3://nosuchbucket/corpus", "s3://data/errout")
    assert rc == 2 and len(err) == 1 and "bucket 'nosuchbucket' does not exist" in err[0], err
    rc, err = _run_cli(capsys, str(small_corpus), "s3://nosuchbucket/out")
    assert rc == 2 and len(err) == 1 and "bucket 'nosuchbucket' does not exist" in err[0], err
    assert s3.keys("s3://data/errout") == []


def test_dead_endpoint_fails_in_one_line_not_a_hang(error_input, tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    env = {**os.environ, "AWS_ENDPOINT_URL": dead}
    proc = subprocess.run([sys.executable, "-m", "datacurate.cli", "run", str(REPO / "pipelines" / "langid_only.yaml"),
                           "--input", error_input, "--output", str(tmp_path / "out"), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=120)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(err) == 1 and "does not answer" in err[0], err
    assert not (tmp_path / "out").exists()


def test_s3_listing_globs_and_read_plan_match_local(s3_server, small_corpus):
    from datacurate.configs.pipeline import InputConfig
    from datacurate.formats.io import expand_inputs, plan_reads

    s3.make_bucket("plan")
    s3.upload_dir(small_corpus, "s3://plan/corpus")
    for pattern in ("**/*.jsonl", "*.jsonl*", "web/*", "[fl]*"):
        remote = [src for _, src in expand_inputs([f"s3://plan/corpus/{pattern}"])]
        local = [src for _, src in expand_inputs([f"{small_corpus}/{pattern}"])]
        assert remote == local and remote, pattern
    plan = lambda p: [(t.source, t.fmt, t.start, t.end, t.first_line) for t in plan_reads(InputConfig(path=[p], chunk_bytes=4096))]
    remote, local = plan("s3://plan/corpus"), plan(str(small_corpus))
    assert remote == local
    assert sum(1 for t in local if t[0] == "news.jsonl") > 3  # cut into ranged read tasks at line ends


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_killed_run_leaves_no_stats_json_in_the_bucket_and_resumes(s3_server, small_corpus, tmp_path):
    """The driver is SIGKILLed after its first map tasks (a real crash of the whole run).
    The workers wrote their parts and journal entries straight into the bucket (under
    OUT/_work, nothing under a final name, no stats.json); --resume, run from another
    directory with another HOME (nothing of the first run on local disk), finishes from
    the journal in the bucket and moves the outputs into place."""
    s3.make_bucket("crash")
    s3.upload_dir(small_corpus, "s3://crash/corpus")
    cmd = [sys.executable, "-m", "datacurate.cli", "run", str(REPO / "pipelines" / "langid_only.yaml"), "--input",
           "s3://crash/corpus", "--output", "s3://crash/out", "--quiet", "--no-report", "--set", "ray.num_cpus=2"]
    first, second = tmp_path / "node-a", tmp_path / "node-b"
    first.mkdir()
    second.mkdir()
    env = {**os.environ, "DATACURATE_FAULT": "langid:map:2:kill-driver", "DATACURATE_FAULT_DIR": str(tmp_path),
           "HOME": str(first), "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    killed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=first)
    assert killed.returncode == -9, killed.stderr[-2000:]
    left = [k for k in s3.keys("s3://crash/out") if not k.endswith("/")]
    assert left and all(k.startswith("out/_work/") for k in left), left
    assert [k for k in left if "/journal/s0/" in k] and [k for k in left if k.endswith(".parquet")], left
    assert not [p for p in first.rglob("*") if p.suffix in (".parquet", ".json")]  # nothing of the run on disk
    done = subprocess.run(cmd + ["--resume"], env={**env, "DATACURATE_FAULT": "", "HOME": str(second)},
                          capture_output=True, text=True, timeout=300, cwd=second)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"resume: segment 0: skipped [1-9]\d* of", done.stderr), done.stderr[-2000:]
    stats = json.loads(s3.get("s3://crash/out/stats.json"))
    assert stats["totals"]["accounted"] and stats["totals"]["read"] == 270
    keys = [k for k in s3.keys("s3://crash/out") if not k.endswith("/")]
    assert not [k for k in keys if "/_work/" in k], keys  # the staging and journal go once complete
    kept = pq.read_table(pa.BufferReader(s3.get(next(f"s3://crash/{k}" for k in keys if "/kept/" in k))))
    assert kept.num_rows > 0


def test_side_inputs_from_s3_read_as_local(s3_server, monkeypatch, tmp_path):
    """A tokenizer, a mixture file and a domain-weights file named by s3:// URLs give what
    the same local files give; a missing one is the same one-line error."""
    from datacurate.configs.pipeline import ConfigError
    from datacurate.stages.mixture import load_weights
    from datacurate.formats.tokenizer import DEFAULT_TOKENIZER, load_tokenizer
    from datacurate.train.data import ShardError, load_domain_weights

    monkeypatch.setenv("HOME", str(tmp_path))  # the local copies go to ~/.cache/datacurate
    s3.make_bucket("side")
    weights = json.dumps({"domain_weights": {"a": 3, "b": 1}}).encode()
    s3.client().put_object(Bucket="side", Key="w.json", Body=weights)
    s3.client().put_object(Bucket="side", Key="tok.json", Body=DEFAULT_TOKENIZER.read_bytes())
    (tmp_path / "w.json").write_bytes(weights)
    assert load_tokenizer("s3://side/tok.json")[1].sha256 == load_tokenizer(DEFAULT_TOKENIZER)[1].sha256
    assert load_weights(None, "s3://side/w.json")[0] == load_weights(None, str(tmp_path / "w.json"))[0]
    assert list(load_domain_weights("s3://side/w.json", ["a", "b"])) == [0.75, 0.25]
    with pytest.raises(ShardError, match="file not found: s3://side/nope.json"):
        load_domain_weights("s3://side/nope.json", ["a", "b"])
    with pytest.raises(ConfigError, match="tokenizer file not found: s3://side/nope.json"):
        load_tokenizer("s3://side/nope.json")
