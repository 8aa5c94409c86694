"""``datacurate`` command line: run a pipeline, list stages, print a run's funnel."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import re
import sys
import typing

from datacurate.config import ConfigError, load_config
from datacurate.io import InputError


def _field_comments(cls: type) -> dict[str, str]:
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\s+(\w+):[^\n#]*#\s*([^\n]*)$", src, re.M)}


def _describe(cls: type, prefix: str = "  ") -> list[str]:
    out = []
    hints = typing.get_type_hints(cls)
    comments = _field_comments(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out.append(f"{prefix}{f.name}:")
            out += _describe(tp, prefix + "  ")
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        tname = str(tp).replace("typing.", "").replace("<class '", "").replace("'>", "")
        note = f"  # {comments[f.name]}" if f.name in comments else ""
        out.append(f"{prefix}{f.name}: {json.dumps(default, default=str)}  ({tname}){note}")
    return out


def cmd_stages(args) -> int:
    from datacurate.stages import STAGES

    for name, cls in STAGES.items():
        doc = (inspect.getmodule(cls).__doc__ or "").strip().splitlines()[0]
        print(f"{name}: {doc}")
        print("\n".join(_describe(cls.Config)))
        print()
    return 0


def cmd_run(args) -> int:
    from datacurate.engine import run_pipeline
    from datacurate.engine.stats import format_funnel

    address = args.ray_address or os.environ.get("RAY_ADDRESS")
    cfg = load_config(args.pipeline, args.set, input_path=args.input, output_path=args.output, ray_address=address)
    if args.quiet:
        cfg.ray.progress = False
    report = run_pipeline(cfg)
    print(format_funnel(report))
    print(f"outputs: {cfg.output.path}/kept, {cfg.output.path}/rejected, {cfg.output.path}/stats.json")
    return 0


def cmd_stats(args) -> int:
    from datacurate.engine.stats import format_funnel

    path = args.output if args.output.endswith(".json") else os.path.join(args.output, "stats.json")
    if not os.path.isfile(path):
        raise InputError(f"no stats.json in {args.output} (is it a datacurate output directory?)")
    with open(path) as f:
        print(format_funnel(json.load(f)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="datacurate", description="Data curation for LLM pretraining on Ray.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a YAML pipeline")
    r.add_argument("pipeline", help="pipeline YAML file")
    r.add_argument("--input", help="input file, directory or glob (overrides the YAML)")
    r.add_argument("--output", help="output directory (overrides the YAML)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter, e.g. langid.min_score=0.5 or input.text_field=content")
    r.add_argument("--ray-address", help="Ray cluster address (default: $RAY_ADDRESS, else an embedded local Ray)")
    r.add_argument("--quiet", action="store_true", help="no live progress")
    r.set_defaults(fn=cmd_run)
    s = sub.add_parser("stages", help="list stages with their parameters and defaults")
    s.set_defaults(fn=cmd_stages)
    st = sub.add_parser("stats", help="print the funnel of a finished run")
    st.add_argument("output", help="a run's output directory")
    st.set_defaults(fn=cmd_stats)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ConfigError, InputError, FileNotFoundError) as e:
        print(f"datacurate: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
