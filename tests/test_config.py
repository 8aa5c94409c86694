"""Config loading: strict keys and types, one-line errors, --set overrides."""

from pathlib import Path

import pytest

from datacurate.configs.pipeline import ConfigError, PipelineConfig, dump_config, load_config
from datacurate.stages.heuristics import HeuristicsConfig
from datacurate.stages.langid import LangIdConfig


def base(**extra) -> dict:
    stages = [{"langid": {"languages": ["en"]}}, "heuristics"]
    return {"input": "data.jsonl", "output": "out", "stages": stages, **extra}


def error(source, overrides=None, **kwargs) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(source, overrides, **kwargs)
    msg = str(e.value)
    assert "\n" not in msg.strip()
    return msg


def test_loads_defaults_and_stage_configs():
    cfg = load_config(base())
    assert isinstance(cfg, PipelineConfig)
    assert cfg.input.path == ["data.jsonl"] and cfg.output.path == "out"
    assert [s.name for s in cfg.stages] == ["langid", "heuristics"]
    assert isinstance(cfg.stages[0].config, LangIdConfig) and cfg.stages[0].config.languages == ["en"]
    assert cfg.stages[1].config == HeuristicsConfig()


def test_unknown_stage():
    msg = error(base(stages=[{"langidd": {}}]))
    assert "stages[0]" in msg and "unknown stage 'langidd'" in msg and "did you mean 'langid'" in msg


def test_misspelt_keys_suggest_the_right_one():
    msg = error(base(stages=[{"heuristics": {"gopher_quality": {"min_word": 20}}}]))
    assert "stages[0].heuristics.gopher_quality" in msg and "'min_word'" in msg and "did you mean 'min_words'" in msg
    assert "did you mean 'stages'" in error({"input": "x.jsonl", "stage": []})
    assert "did you mean 'text_field'" in error(base(input={"path": "x", "txt_field": "body"}))
    assert "did you mean 'languages'" in error(base(stages=[{"langid": {"language": ["en"]}}]))


@pytest.mark.parametrize("stages, where, what", [
    ([{"langid": {"min_score": "high"}}], "stages[0].langid.min_score", "expected a number"),
    ([{"heuristics": {"gopher_quality": {"min_words": 2.5}}}], "min_words", "expected an integer"),
    ([{"heuristics": {"c4": {"enabled": "maybe"}}}], "c4.enabled", "expected true/false"),
    ([{"heuristics": {"fineweb": 3}}], "fineweb", "expected a mapping"),
    ([{"langid": {"languages": {"en": 1}}}], "languages", "expected a list"),
    ([{"langid": {"min_score": 1.5}}], "langid", "min_score must be within"),
    ("langid", "stages", "expected a list"),
])
def test_wrong_types(stages, where, what):
    msg = error(base(stages=stages))
    assert where in msg and what in msg


def test_wrong_input_types():
    assert "input.format: 'csv' is not one of" in error(base(input={"path": "x", "format": "csv"}))
    assert "input.batch_rows" in error(base(input={"path": "x", "batch_rows": "many"}))


def test_missing_input():
    assert "no input path" in error({"stages": ["langid"]})
    assert "no input path" in error({"input": {"text_field": "body"}, "stages": ["langid"]})
    # --input supplies it
    assert load_config({"stages": ["langid"]}, input_path="d.jsonl").input.path == ["d.jsonl"]


def test_set_overrides():
    cfg = load_config(base(), [
        "heuristics.gopher_quality.min_words=20",
        "input.text_field=content",
        "langid.languages=[en,de]",
        "langid.min_score=0.5",
        "output.path=elsewhere",
        "ray.num_cpus=2",
        "1.c4.enabled=false",
    ])
    assert cfg.stages[1].config.gopher_quality.min_words == 20
    assert cfg.stages[1].config.c4.enabled is False
    assert cfg.input.text_field == "content" and cfg.input.path == ["data.jsonl"]
    assert cfg.stages[0].config.languages == ["en", "de"]
    assert cfg.stages[0].config.min_score == 0.5
    assert cfg.output.path == "elsewhere" and cfg.ray.num_cpus == 2


def test_set_overrides_are_checked():
    assert "did you mean 'min_words'" in error(base(), ["heuristics.gopher_quality.min_wrds=20"])
    assert "no section or stage 'dedup'" in error(base(), ["dedup.threshold=0.8"])
    assert "did you mean 'output'" in error(base(), ["ouput.path=x"])
    assert "expected an integer" in error(base(), ["heuristics.gopher_quality.min_words=many"])
    assert "KEY=VALUE" in error(base(), ["langid.min_score"])


def test_command_line_paths_override_yaml(tmp_path):
    cfg = load_config(base(), input_path=["a.jsonl", "b.parquet"], output_path=str(tmp_path), ray_address="auto")
    assert cfg.input.path == ["a.jsonl", "b.parquet"] and cfg.output.path == str(tmp_path)
    assert cfg.ray.address == "auto"


def test_yaml_file_and_round_trip(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("input: {path: data, text_field: body}\nstages:\n  - langid: {languages: [en]}\n  - heuristics\n")
    cfg = load_config(path)
    assert cfg.input.text_field == "body"
    again = tmp_path / "resolved.yaml"
    again.write_text(dump_config(cfg))
    assert load_config(again) == cfg


def test_invalid_yaml(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("input: data\nstages:\n  - langid: {languages: [en\n  - heuristics\n")
    msg = error(path)
    assert str(path) in msg and "invalid YAML" in msg and "line" in msg
    path.write_text("- just\n- a list\n")
    assert "top level must be a mapping" in error(path)
    assert "not found" in error(tmp_path / "missing.yaml")


@pytest.mark.parametrize("name", ["sample.yaml", "langid_only.yaml", "heuristics_only.yaml", "template.yaml",
                                  "commoncrawl.yaml"])
def test_shipped_pipelines_load(name):
    cfg = load_config(Path(__file__).resolve().parent.parent / "pipelines" / name)
    assert cfg.stages and cfg.input.path


def test_a_stage_twice_only_when_its_instances_are_told_apart():
    """Two exact_dedup (by URL, by text) have their own stats.json keys and filter
    directories; two that would share either are one line, before any work."""
    from datacurate.registry import STAGES

    cfg = load_config({"input": "x.jsonl", "stages": [{"exact_dedup": {"key": "url"}}, "exact_dedup"]})
    keys = [s.cls.stats_key(s.config) for s in cfg.stages]
    dirs = [s.cls.output_dir(s.config, "/out") for s in cfg.stages]
    assert keys == ["exact_dedup:url", "exact_dedup"] and dirs == ["/out/exact_dedup_url_filter", "/out/exact_dedup_filter"]
    assert set(STAGES["exact_dedup"].default_outputs) == {"exact_dedup_filter", "exact_dedup_url_filter"}
    with pytest.raises(ConfigError, match=r"stages\[1\].exact_dedup: counted as 'exact_dedup' in stats.json, as stages\[0\]"):
        load_config({"input": "x.jsonl", "stages": ["exact_dedup", {"exact_dedup": {"mode": "paragraph"}}]})
    with pytest.raises(ConfigError, match=r"stages\[1\].exact_dedup: writes /f, as stages\[0\] does"):
        load_config({"input": "x.jsonl", "stages": [{"exact_dedup": {"save_filter": "/f"}},
                                                    {"exact_dedup": {"key": "url", "save_filter": "/f"}}]})


def test_funnel_says_when_it_leaves_reasons_out():
    from datacurate.engine.stats import format_funnel

    report = {"totals": {"read": 15, "kept": 0, "rejected": 15, "accounted": True, "wall_seconds": 1.0},
              "stages": {"heuristics": {"in": 15, "kept": 0, "rejected_total": 15, "seconds": 0.1,
                                        "rejected": {f"gopher/r{i}": 1 for i in range(15)}}}}
    text = format_funnel(report)
    assert "gopher/r11" in text and "gopher/r12" not in text
    assert "... 3 more reasons (stats.json)" in text


def test_python_api_keeps_every_input_and_output_key(tmp_path):
    """Pipeline.from_yaml(...).config(input=..., output=...) changes the paths only."""
    from datacurate import Pipeline

    path = tmp_path / "p.yaml"
    path.write_text("input: {path: a.jsonl, text_field: content, id_field: key, max_doc_chars: 100}\n"
                    "output: {path: out, keep_work: true, compression: snappy}\nstages: [heuristics]\n")
    pipe = Pipeline.from_yaml(str(path))
    cfg = pipe.config(input="b.jsonl", output=str(tmp_path / "o"))
    assert cfg.input.path == ["b.jsonl"]
    assert (cfg.input.text_field, cfg.input.id_field, cfg.input.max_doc_chars) == ("content", "key", 100)
    assert (cfg.output.path, cfg.output.keep_work, cfg.output.compression) == (str(tmp_path / "o"), True, "snappy")
    cfg = pipe.config(text_field="body")  # an input option alone keeps the YAML's path and the rest
    assert (cfg.input.path, cfg.input.text_field, cfg.input.id_field) == (["a.jsonl"], "body", "key")


def test_one_set_merge_walks_the_dataclass_tree():
    """coerce.set_key, the one --set merge (pipelines, training, ablation, classifier configs)."""
    from datacurate.configs.ablation import AblationConfig
    from datacurate.core.coerce import set_key
    from datacurate.configs.train import TrainConfig

    raw = {"input": "data.jsonl", "stages": ["langid", {"heuristics": None}]}
    set_key(raw, ["input", "text_field"], "body", PipelineConfig)  # a section given as a path
    set_key(raw, ["stages", "1", "c4", "enabled"], False, PipelineConfig)  # a list entry by index ...
    set_key(raw, ["stages", "langid", "min_score"], 0.5, PipelineConfig)  # ... or by name
    set_key(raw, ["train", "data", "tokens_per_step"], 1024, PipelineConfig)
    assert raw == {"input": {"path": "data.jsonl", "text_field": "body"},
                   "stages": [{"langid": {"min_score": 0.5}}, {"heuristics": {"c4": {"enabled": False}}}],
                   "train": {"data": {"tokens_per_step": 1024}}}
    with pytest.raises(ConfigError, match="no entry 'dedup' \\(entries: langid, heuristics\\)"):
        set_key(raw, ["stages", "dedup", "x"], 1, PipelineConfig)
    train = {"data": 3}
    with pytest.raises(ConfigError, match="--set data.cycles: 'data' is not a section"):
        set_key(train, ["data", "cycles"], 2, TrainConfig)
    ablation = {}  # arms.<arm>.set keeps its keys whole (whole_keys metadata); arms.<arm>.train nests
    set_key(ablation, ["arms", "a", "set", "langid", "min_score"], 0.5, AblationConfig)
    set_key(ablation, ["arms", "a", "train", "data", "curriculum"], "uniform", AblationConfig)
    set_key(ablation, ["budget", "train", "optim", "lr"], 1e-3, AblationConfig)
    assert ablation == {"arms": {"a": {"set": {"langid.min_score": 0.5}, "train": {"data": {"curriculum": "uniform"}}}},
                        "budget": {"train": {"optim": {"lr": 1e-3}}}}


def test_help_text_is_field_metadata(capsys):
    """`datacurate stages` and `train --help` print each field's opt(default, help)."""
    import dataclasses

    from datacurate.cli import _describe, main

    assert "top-1 probability" in {f.name: f for f in dataclasses.fields(LangIdConfig)}["min_score"].metadata["help"]
    assert "  min_score: 0.65  (float)  # with a keep-list: reject when the top-1 probability is below this" in \
        _describe(LangIdConfig)
    assert LangIdConfig().languages is None and HeuristicsConfig().gopher_quality.stop_words[:2] == ["the", "be"]
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "grad_accum: 1  (int)  # micro-batches per step" in out and "    preset: \"tiny\"" in out


def test_the_config_layer_imports_no_training_code():
    """Pipeline, training and ablation configs load without torch or datacurate.train."""
    import subprocess
    import sys

    code = ("import sys, datacurate.configs.pipeline, datacurate.configs.ablation, datacurate.configs.train; "
            "print(sorted(m for m in sys.modules if m in ('torch', 'ray') or m.startswith('datacurate.train.')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr
