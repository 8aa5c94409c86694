"""Python API: the same pipelines as the YAML files, built in code.

    from datacurate import Pipeline, LangId, Heuristics
    report = Pipeline([LangId(languages=["en"]), Heuristics()]).run("sample_data/corpus", "out/api")
    table = Heuristics()(pa.table({"text": [...]}))           # one stage, one batch, no Ray
    table = Pipeline([LangId(), Heuristics()]).apply(batch)   # all stages on one batch, no Ray
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import pyarrow as pa

from datacurate.configs.pipeline import (
    InputConfig, OutputConfig, PipelineConfig, RayConfig, StageSpec, check_order, coerce, load_config, to_dict,
)
from datacurate.core.schema import BASE_COLUMNS, REJECT_COLUMNS, TEXT
from datacurate.stages.base import Stage


class Pipeline:
    def __init__(self, stages: Sequence[Stage], ray: RayConfig | dict | None = None):
        self.stages = list(stages)
        self.ray = coerce(ray or {}, RayConfig, "ray")
        check_order([StageSpec(s.name, s.config, type(s)) for s in self.stages])

    @classmethod
    def from_yaml(cls, path: str, overrides: list[str] | None = None) -> "Pipeline":
        from datacurate.engine.process import build_stages

        cfg = load_config(path, overrides)
        pipe = cls(build_stages(cfg.stages), cfg.ray)
        pipe._input, pipe._output = cfg.input, cfg.output
        pipe._doremi, pipe._train = cfg.doremi, cfg.train  # the YAML's doremi: / train: sections
        return pipe

    def config(self, input: str | list[str] | None = None, output: str | None = None, **input_options: Any) -> PipelineConfig:
        inp = getattr(self, "_input", InputConfig())
        if input is not None or input_options:  # every other input key (text_field, ...) is kept
            base = {**to_dict(inp), **({"path": input} if input is not None else {}), **input_options}
            inp = coerce(base, InputConfig, "input")
        out = old = getattr(self, "_output", OutputConfig())
        if output is not None:
            out = dataclasses.replace(old, path=output)
        cfg = PipelineConfig(input=inp, output=out, ray=self.ray,
                             stages=[StageSpec(s.name, s.config, type(s)) for s in self.stages])
        cfg.doremi, cfg.train = (_moved(getattr(self, k, None), old.path, out.path) for k in ("_doremi", "_train"))
        return cfg

    def run(self, input: str | list[str] | None = None, output: str | None = None, resume: bool = False,
            **input_options: Any) -> dict:
        """Run on Ray (embedded local Ray unless ``ray.address`` is set); return the stats
        report. ``resume`` continues an interrupted run into the same output."""
        from datacurate.engine import run_pipeline

        return run_pipeline(self.config(input, output, **input_options), resume=resume)

    def apply(self, table: pa.Table | dict, stats: dict | None = None) -> pa.Table:
        """Run every stage on one in-memory batch without Ray; rejected rows stay, with reasons.
        ``stats`` gets each stage's statistics as in stats.json (in, kept, rejected, metrics)."""
        from datacurate.engine.process import apply_stage

        if isinstance(table, dict):
            table = pa.table(table)
        for name, typ in {**BASE_COLUMNS, **REJECT_COLUMNS}.items():
            if name not in table.column_names:
                table = table.append_column(name, pa.nulls(table.num_rows, typ))
        if table.schema.field(TEXT).type != BASE_COLUMNS[TEXT]:
            table = table.set_column(table.schema.get_field_index(TEXT), TEXT, table.column(TEXT).cast(BASE_COLUMNS[TEXT]))
        for stage in self.stages:
            table, st = apply_stage(stage, table)
            if stats is not None:
                stats[stage.stats_key(stage.config)] = st.to_dict()
        return table


def _moved(tc, old: str, new: str):
    """A train / doremi section whose default paths (under the YAML's output) follow ``new``."""
    import copy
    import os

    if tc is None or old == new:
        return tc
    tc = copy.deepcopy(tc)
    for obj, key in ((tc, "shards"), (tc, "output"), (tc.data, "domain_weights")):
        value = getattr(obj, key)
        if isinstance(value, str) and os.path.commonpath([os.path.abspath(value), os.path.abspath(old)]) == \
                os.path.abspath(old):
            setattr(obj, key, os.path.join(new, os.path.relpath(value, old)))
    return tc
