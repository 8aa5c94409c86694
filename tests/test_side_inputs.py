"""Side inputs on a cluster (datacurate/engine/side.py): local blocklists, models with their
cards and a tokenizer named by a pipeline are copied into the output's file system, and a
node builds its stages from its own downloaded copies, with the same categories and models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from datacurate.configs.pipeline import load_config
from datacurate.engine.process import build_stages
from datacurate.engine.side import stage_side_inputs
from tests import s3
from tests.cli_run import REPO


def test_side_inputs_staged_on_s3_read_back_as_local(s3_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the node's cache: ~/.cache/datacurate/side
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "sample_data" / "blocklist", tmp_path / "bl")
    shutil.copy(REPO / "classifiers" / "quality.ftz", tmp_path / "q.ftz")
    shutil.copy(REPO / "classifiers" / "quality.json", tmp_path / "q.json")  # the model's card travels with it
    (tmp_path / "p.yaml").write_text(
        "input: {path: x.jsonl}\noutput: s3://side-in/out\nstages:\n"
        "  - url_filter: {blocklist: [bl]}\n  - quality: {model: q.ftz}\n")
    s3.make_bucket("side-in")
    cfg = load_config(str(tmp_path / "p.yaml"))
    local = build_stages(cfg.stages)
    urls = stage_side_inputs(cfg.stages, "s3://side-in/out/_work")
    assert len(urls) == 2 and all(u.startswith("s3://side-in/out/_work/side/") for u in urls), urls
    assert cfg.stages[0].config.blocklist == [urls[0]] and urls[0].endswith("/bl")
    assert cfg.stages[1].config.model == urls[1] and urls[1].endswith(f"/{tmp_path.name}/q.ftz")
    assert any(k.endswith("q.json") for k in s3.keys("s3://side-in/out/_work/side/"))
    shutil.rmtree(tmp_path / "bl")  # a worker node has none of the driver's files
    (tmp_path / "q.ftz").unlink()
    (tmp_path / "q.json").unlink()
    node = build_stages(cfg.stages)
    assert node[0].blocklist.categories == local[0].blocklist.categories
    text = (REPO / "sample_data" / "blocklist" / "blogs" / "urls").read_text()
    listed = next(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
    rows = pa.table({"id": ["a", "b"], "text": ["x", "y"], "url": [f"http://{listed}page.html", "http://ok.example/"]})
    assert node[0](rows).equals(local[0](rows)) and node[0](rows)["reject_reason"].to_pylist() == ["url_filter/blogs", None]
    texts = pa.table({"id": ["a"], "text": ["A plain sentence of edited prose, as a test."], "lang": ["en"]})
    assert node[1](texts).equals(local[1](texts))


def test_side_inputs_staged_on_a_shared_file_system(tmp_path, monkeypatch):
    """An output on a file system every node mounts: the copies are plain files under OUT/_work/side."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "sample_data" / "blocklist", tmp_path / "bl")
    (tmp_path / "p.yaml").write_text(f"input: {{path: x.jsonl}}\noutput: {tmp_path / 'out'}\n"
                                     "stages:\n  - url_filter: {blocklist: [bl]}\n")
    cfg = load_config(str(tmp_path / "p.yaml"))
    url, = stage_side_inputs(cfg.stages, str(tmp_path / "out" / "_work"))
    assert url.startswith(str(tmp_path / "out" / "_work" / "side")) and (Path(url) / "blogs" / "urls").is_file()
    assert build_stages(cfg.stages)[0].blocklist.categories == ["blogs", "shopping"]


def test_benchmarks_and_a_saved_filter_are_staged(tmp_path, monkeypatch):
    """decontaminate's benchmarks (a list with a glob, or {name: glob}) and exact_dedup's
    load_filter are read on whichever node runs the global phases: they are staged too, and
    the index built from the copies equals the one built from the driver's files."""
    from datacurate.stages.decontaminate import build_index

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench").mkdir()
    shutil.copy(REPO / "sample_data" / "benchmarks" / "brown_reading.jsonl", tmp_path / "bench" / "reading.jsonl")
    lines = (tmp_path / "bench" / "reading.jsonl").read_text().splitlines()
    (tmp_path / "bench" / "half.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    (tmp_path / "flt").mkdir()
    (tmp_path / "flt" / "filter.json").write_text('{"num_shards": 1}')
    head = f"input: {{path: x.jsonl}}\noutput: {tmp_path / 'out'}\nstages:\n"
    (tmp_path / "p.yaml").write_text(head + "  - exact_dedup: {load_filter: flt}\n"
                                     "  - decontaminate: {benchmarks: ['bench/*.jsonl']}\n")
    (tmp_path / "q.yaml").write_text(head + "  - decontaminate: {benchmarks: {all: 'bench/*.jsonl'}}\n")
    cfg, cfg2 = load_config(str(tmp_path / "p.yaml")), load_config(str(tmp_path / "q.yaml"))
    stages = cfg.stages + cfg2.stages
    before = [build_index(s.config) for s in stages[1:]]
    urls = stage_side_inputs(stages, str(tmp_path / "out" / "_work"))
    side = str(tmp_path / "out" / "_work" / "side")
    assert len(urls) == 4 and all(u.startswith(side) for u in urls), urls
    assert stages[0].config.load_filter.startswith(side) and stages[0].config.load_filter.endswith("/flt")
    listed, mapped = stages[1].config.benchmarks, stages[2].config.benchmarks
    assert [Path(u).name for u in listed] == ["half.jsonl", "reading.jsonl"] and set(mapped) == {"all"}
    shutil.rmtree(tmp_path / "bench")  # a worker node has none of the driver's files
    shutil.rmtree(tmp_path / "flt")
    assert (Path(stages[0].config.load_filter) / "filter.json").is_file()
    after = [build_index(s.config) for s in stages[1:]]
    for a, b in zip(before, after):
        assert a.names == b.names and a.rec_ids == b.rec_ids and (a.keys == b.keys).all() and (a.rec == b.rec).all()
        # the report names the user's files, not the staged copies (origin.json beside each copy)
        assert {k: [str(Path(f).resolve()) for f in v["files"]] for k, v in a.info.items()} == \
            {k: v["files"] for k, v in b.info.items()}, (a.info, b.info)


def test_stages_declare_their_side_inputs_and_the_engine_names_none():
    """Each stage declares on its class the config fields naming its side inputs (as it declares
    its columns); engine/side.py reads the declarations and names no stage and no field."""
    import dataclasses

    from datacurate.engine import side
    from datacurate.registry import STAGES

    declared = {name: cls.side_inputs for name, cls in STAGES.items() if cls.side_inputs}
    assert {"url_filter", "langid", "quality", "toxicity", "tokenize", "dsir", "decompose", "decontaminate",
            "exact_dedup"} <= set(declared)
    for name, cls in STAGES.items():
        assert set(cls.local_side_inputs) <= set(cls.side_inputs), name
        for dotted in cls.side_inputs:  # each names a field of the stage's config
            obj = cls.Config
            for part in dotted.split("."):
                fields = {f.name: f for f in dataclasses.fields(obj)}
                assert part in fields, (name, dotted)
                obj = fields[part].default_factory if fields[part].default_factory is not dataclasses.MISSING \
                    else type(fields[part].default)
    source = Path(side.__file__).read_text()
    named = [n for n in STAGES if f'"{n}"' in source] + \
        [f for cls in STAGES.values() for f in cls.side_inputs if f'"{f}"' in source]
    assert named == []
