"""``datacurate`` command line: run a pipeline, list stages, print a run's funnel."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import sys
import typing

from datacurate.formats import storage
from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.engine.ray.cluster import refuse_relative_in_job
from datacurate.engine.ray.supervise import may_join, supervise
from datacurate.core.errors import Interrupted, RunStopped, as_interrupted, doing, explain, now_doing, stopped
from datacurate.formats.io import InputError
from datacurate.registry import STAGES
from datacurate.formats.storage import StorageError
from datacurate.configs.train import DoremiRunConfig, TrainConfig, load_train_config


def _describe(cls: type, prefix: str = "  ") -> list[str]:
    """A config dataclass's keys: default, type and help (the fields' ``opt(..., help)``)."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out.append(f"{prefix}{f.name}:")
            out += _describe(tp, prefix + "  ")
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        tname = str(tp).replace("typing.", "").replace("<class '", "").replace("'>", "")
        note = f"  # {f.metadata['help']}" if "help" in f.metadata else ""
        out.append(f"{prefix}{f.name}: {json.dumps(default, default=str)}  ({tname}){note}")
    return out


def cmd_stages(args) -> int:
    from datacurate.core.coerce import unknown_key

    for name in args.names:
        if name not in STAGES:
            raise unknown_key(name, list(STAGES), "stages", "stage")
    for name, cls in STAGES.items():
        if args.names and name not in args.names:
            continue
        doc = (cls.__dict__.get("__doc__") or inspect.getmodule(cls).__doc__ or "").strip().splitlines()[0]
        print(f"{name}: {doc}")
        print("".join(f"  # {line}\n" for line in _contract(cls)) + "\n".join(_describe(cls.Config)))
        if args.names:  # long tables only for the stages asked for by name
            print("".join(f"  {line}\n" for line in cls.details(cls.Config())), end="")
        print()
    return 0


def _contract(cls) -> list[str]:
    """What a stage class declares: the columns it adds (an input field may not take their
    names), its scores and thresholds, the stages it needs, what it writes."""
    writes = [", ".join(f"OUT/{n}" for n in cls.default_outputs) + (f" (or where {cls.output_key} says)"
                                                                     if cls.output_key else "")]
    return [f"{what}: {', '.join(items)}" for what, items in (
        ("adds columns", [f"{c} ({t})" for c, t in cls.columns.items()]),
        ("scores", [f"{c} (rejects {s.reject} {s.key})" if s.key else c for c, s in cls.scores.items()]),
        ("needs before it", cls.requires), ("writes", writes if cls.default_outputs else []),
        ("makes", ["token ids"] * cls.makes_tokens + ["a shard set (train: reads it)"] * cls.writes_shards),
        ("runs", ["over the whole corpus (a global stage)"] * cls.is_global)) if items]


def cmd_run(args) -> int:
    from datacurate.engine import run_pipeline
    from datacurate.engine.stats import format_funnel

    address = args.ray_address or os.environ.get("RAY_ADDRESS")
    cfg = load_config(args.pipeline, args.set, input_path=args.input, output_path=args.output, ray_address=address)
    if args.quiet:
        cfg.ray.progress = False
    report = run_pipeline(cfg, resume=args.resume, report=not args.no_report)
    print(format_funnel(report))
    outs = [f"{cfg.output.path}/kept", f"{cfg.output.path}/rejected", f"{cfg.output.path}/stats.json"]
    named = list(dict.fromkeys(k for cls in STAGES.values() for k in cls.output_metrics))
    for st in report["stages"].values():  # what stages wrote besides kept/rejected (Stage.output_metrics)
        outs += [_shown(str(st["metrics"][k])) for k in named if k in st.get("metrics", {})]
    if cfg.doremi is not None:
        print("doremi: domain weights " + "  ".join(f"{k} {v:.3f}" for k, v in report["doremi"].items()))
        outs.append(f"{cfg.doremi.output}/domain_weights.json")
    if cfg.train is not None:
        final = report["train"]
        ev = final.get("eval_loss") or {}
        print(f"train: {final['steps']} steps, {final['tokens']:,} tokens; held-out loss " +
              "  ".join(f"{k} {v:.4f}" for k, v in ev.items()))
        outs.append(cfg.train.output)
    if not args.no_report:
        outs.append(f"{cfg.output.path}/report.html")
    print("outputs: " + ", ".join(outs))
    return 0


def _shown(path: str) -> str:
    """A path under the working directory as a relative one, like the other outputs."""
    rel = os.path.relpath(path) if os.path.isabs(path) and "://" not in path else path
    return rel if not rel.startswith("..") else path


def cmd_calibrate(args) -> int:
    from datacurate.calibrate import calibrate

    res = calibrate(args.inputs, args.out, languages=args.languages, sample=args.sample, min_docs=args.min_docs,
                    text_field=args.text_field)
    for lang, tree in res["languages"].items():
        tau = tree.get("langid", {}).get("min_score")
        print(f"{lang}: {len(tree['gopher_quality']['stop_words'])} stop words"
              + (f", langid min_score {tau}" if tau is not None else ""))
    if res["skipped"]:
        print("too few documents (not fitted): " + ", ".join(f"{k} ({n})" for k, n in sorted(res["skipped"].items())))
    print(f"outputs: {args.out}, {res['html']}")
    return 0


def cmd_stats(args) -> int:
    from datacurate.engine.stats import format_funnel

    path = args.output if args.output.endswith(".json") else storage.join(args.output, "stats.json")
    if not storage.isfile(path):
        raise InputError(f"no stats.json in {args.output} (is it a datacurate output directory?)")
    print(format_funnel(json.loads(storage.read_text(path))))
    where = path.rsplit("/", 1)[0] if "/" in path else ""
    page = storage.join(where, "report.html") if where else "report.html"
    print(f"report: {page}" if storage.isfile(page) else f"no report.html yet: datacurate report {where or '.'}")
    return 0


def cmd_report(args) -> int:
    from datacurate.report import write_ablation_report, write_report

    if storage.isfile(storage.join(args.output, "ablation.json")):  # a datacurate ablate output
        print(f"written: {write_ablation_report(args.output, path=args.out)}")
        return 0
    if not any(storage.exists(storage.join(args.output, p)) for p in ("stats.json", "kept", "rejected")):
        raise InputError(f"no stats.json, kept/ or rejected/ in {args.output} (is it a datacurate output directory?)")
    if args.train and not storage.isdir(args.train):
        raise InputError(f"--train: no such directory: {args.train}")
    print(f"written: {write_report(args.output, train_dir=args.train, path=args.out)}")
    return 0


def cmd_train_classifier(args) -> int:
    from datacurate.classify import load_train_config, train_classifier

    cfg = load_train_config(args.config, args.set, positive=args.positive, negative=args.negative,
                            data=args.data, train_only=args.train_only, output=args.output)
    card = train_classifier(cfg)
    m = card["heldout"]
    print(f"{cfg.output}: {card['size_bytes'] / 1e6:.2f} MB, {card['data']['train']['examples']:,} train / "
          f"{m['n']:,} held-out examples ({card['split']['groups_heldout']} held-out source documents)")
    print(f"held-out: precision {m['precision']:.4f}  recall {m['recall']:.4f}  F1 {m['f1']:.4f}  "
          f"ROC-AUC {m['roc_auc']:.4f}  (length alone: ROC-AUC {m['length_only_roc_auc']:.4f})")
    print(f"card: {os.path.splitext(cfg.output)[0]}.json")
    return 0


def cmd_train_tokenizer(args) -> int:
    from datacurate.formats.tokenizer import file_sha256, iter_texts, load_tokenizer, train_tokenizer

    texts, balance = iter_texts(args.inputs), {}
    if args.alpha is not None:
        from datacurate.formats.balance import balanced_texts

        texts = balanced_texts(args.inputs, args.alpha, column=args.by, report=balance)
    tok = train_tokenizer(texts, vocab_size=args.vocab_size, min_frequency=args.min_frequency, bos=args.bos)
    if balance:
        kept = sum(v["bytes"] * v["kept_fraction"] for v in balance.values())
        print(f"balanced over {len(balance)} values of {args.by} (alpha {args.alpha}): about "
              f"{kept / max(sum(v['bytes'] for v in balance.values()), 1):.1%} of the text's bytes trained on")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tok.save(args.out)
    _, info = load_tokenizer(args.out)
    bos = f", BOS {info.bos_token} = {info.bos_id}" if info.bos_id is not None else ""
    print(f"{args.out}: vocab {info.vocab_size:,}, EOS {info.eos_token} = {info.eos_id}{bos}, "
          f"sha256 {file_sha256(args.out)}")
    return 0


def cmd_dedup_eval(args) -> int:
    """Precision / recall of near dedup on known duplicate pairs, by true-Jaccard band."""
    from datacurate.dedup_eval import dedup_pipeline, generate, pair_report, read_clusters, read_pairs
    from datacurate.engine import run_pipeline

    os.makedirs(args.output, exist_ok=True)
    if args.generate:
        docs_path, pairs = generate(args.source, args.generate, args.seed, args.output)
    elif args.docs and args.pairs:
        docs_path, pairs = args.docs, read_pairs(args.pairs)
    else:
        raise ConfigError("dedup-eval: give --generate N, or --docs and --pairs")
    cfg = load_config(dedup_pipeline(docs_path, os.path.join(args.output, "run"), args.threshold), args.set)
    run_pipeline(cfg)
    report = pair_report(pairs, read_clusters(cfg.output.path), threshold=args.positive_jaccard)
    with open(os.path.join(args.output, "dedup_eval.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(f"{'true Jaccard':<16}{'pairs':>8}{'merged':>8}{'share':>9}")
    for band, r in report["bands"].items():
        share = "-" if r["merged_frac"] is None else f"{r['merged_frac']:.4f}"
        print(f"{band:<16}{r['pairs']:>8}{r['merged']:>8}{share:>9}")
    print(f"recall (Jaccard >= {report['threshold']}): {report['recall']}; precision: {report['precision']}; "
          f"merged with Jaccard <= 0.5: {report['merged_le_0.5']}")
    return 0


def _ray_cfg(args):
    from datacurate.configs.pipeline import RayConfig

    return RayConfig(address=args.ray_address or os.environ.get("RAY_ADDRESS"), progress=False)


def cmd_train(args) -> int:
    from datacurate.engine.launch import launch_train

    cfg = load_train_config(args.config, args.set, shards=args.shards, output=args.output, workers=args.workers)
    final = launch_train(cfg, args.resume, _ray_cfg(args))
    ev = final.get("eval_loss") or {}
    print(f"trained {final['steps']} steps, {final['tokens']:,} tokens; eval loss " +
          "  ".join(f"{k} {v:.4f}" for k, v in ev.items()))
    print(f"outputs: {cfg.output}/metrics.jsonl, {cfg.output}/final.json, {cfg.output}/checkpoints/latest")
    return 0


def cmd_doremi(args) -> int:
    from datacurate.engine.launch import launch_doremi

    cfg = load_train_config(args.config, args.set, cls=DoremiRunConfig, shards=args.shards, output=args.output,
                            workers=args.workers)
    weights = launch_doremi(cfg, args.resume, _ray_cfg(args))
    print("domain weights: " + "  ".join(f"{k} {v:.4f}" for k, v in weights.items()))
    print(f"outputs: {cfg.output}/domain_weights.json, weights.jsonl, reference/, proxy/")
    return 0


def cmd_eval(args) -> int:
    from datacurate.train import checkpoint
    from datacurate.train.data import ShardDataset
    from datacurate.train.evaluate import eval_loss
    from datacurate.train.loop import pick_device

    ds = ShardDataset(args.shards)
    device = pick_device(args.device)
    model, state = checkpoint.load_model(args.checkpoint, device, ds.tokenizer["sha256"], max(ds.seq_lens, default=0))
    res = {"checkpoint": checkpoint.resolve(args.checkpoint), "step": state["step"], "shards": args.shards,
           "eval_loss": eval_loss(model, ds, {}, device)}
    for k, v in res["eval_loss"].items():
        print(f"{k:<16}{v:.4f}")
    out = args.output or os.path.join(res["checkpoint"], "eval.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    print(f"written: {out}")
    return 0


def cmd_score_tokens(args) -> int:
    from datacurate.train.loop import pick_device
    from datacurate.train.rho1 import score_tokens

    score_tokens(args.checkpoint, args.shards, pick_device(args.device))
    return 0


def cmd_export(args) -> int:
    from datacurate.train.export import export_model

    with doing("export"):
        res = export_model(args.checkpoint, args.output, args.format, tokenizer=args.tokenizer, overwrite=args.overwrite)
    print(f"exported {res['checkpoint']} (step {res['step']}; {res['describe_params']}) -> {res['output']}")
    print(f"open it with transformers.AutoModelForCausalLM.from_pretrained({res['output']!r}) "
          "and AutoTokenizer.from_pretrained(...)")
    return 0


def cmd_ablate(args) -> int:
    from datacurate.configs.ablation import load_ablation_config
    from datacurate.engine.ablate import format_table, run_ablation

    cfg = load_ablation_config(args.ablation, args.set)
    if args.output:
        cfg.output = args.output
    summary = run_ablation(cfg, resume=args.resume, report=not args.no_report)
    print(format_table(summary))
    print(f"outputs: {cfg.output}/ablation.json" + ("" if args.no_report else f", {cfg.output}/report.html")
          + f", {cfg.output}/<arm>/curated, {cfg.output}/<arm>/seed-<k>")
    return 0


def _set_option(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=help)


def _model_command(sub, name: str, fn, help: str, config_help: str, output_help: str, set_help: str, keys) -> None:
    """``train`` and ``doremi`` take the same arguments; ``--help`` lists the config's keys."""
    c = sub.add_parser(name, help=help, epilog="keys:\n" + "\n".join(_describe(keys)),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("config", nargs="?", help=config_help)
    c.add_argument("--shards", help="token shard directory (with manifest.json)")
    c.add_argument("--output", help=output_help)
    _set_option(c, set_help)
    c.add_argument("--resume", action="store_true", help="continue from the latest checkpoints under OUTPUT")
    c.add_argument("--workers", type=int, help="data-parallel workers on Ray Train (default 1: this process)")
    c.add_argument("--ray-address", help="Ray cluster for --workers (default: $RAY_ADDRESS, else an embedded Ray)")
    c.set_defaults(fn=fn)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="datacurate", description="Data curation for LLM pretraining on Ray.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a YAML pipeline")
    r.add_argument("pipeline", help="pipeline YAML file")
    r.add_argument("--input", help="input file, directory or glob (overrides the YAML)")
    r.add_argument("--output", help="output directory (overrides the YAML)")
    _set_option(r, "override a parameter, e.g. STAGE.KEY=VALUE (STAGE: its name or index) or input.text_field=content")
    r.add_argument("--ray-address", help="Ray cluster address (default: $RAY_ADDRESS, else an embedded local Ray)")
    r.add_argument("--quiet", action="store_true", help="no live progress")
    r.add_argument("--resume", action="store_true",
                   help="continue an interrupted run in OUT (same configuration): finished tasks are skipped")
    r.add_argument("--no-report", action="store_true", help="do not write OUT/report.html at the end")
    r.set_defaults(fn=cmd_run)
    s = sub.add_parser("stages", help="list stages with their parameters and defaults")
    s.add_argument("names", nargs="*", metavar="NAME", help="only these stages (default: all)")
    s.set_defaults(fn=cmd_stages)
    ca = sub.add_parser("calibrate", help="fit per-language thresholds (langid, heuristics) on a sample of a corpus, "
                                          "by FineWeb-2's method; writes the YAML both stages take as thresholds:")
    ca.add_argument("inputs", nargs="+", metavar="INPUT", help="JSONL / Parquet files, directories, globs of extracted text "
                                                                  "(a lang column is used, else langid labels them)")
    ca.add_argument("--out", required=True, help="thresholds YAML to write (the HTML page goes beside it)")
    ca.add_argument("--languages", nargs="+", metavar="LANG", help="only these languages (default: every one with "
                                                                    "enough documents)")
    ca.add_argument("--sample", type=int, default=20_000, help="documents per language read (the first ones)")
    ca.add_argument("--min-docs", type=int, default=50, dest="min_docs",
                    help="languages with fewer documents are not fitted")
    ca.add_argument("--text-field", default="text", dest="text_field")
    ca.set_defaults(fn=cmd_calibrate)
    st = sub.add_parser("stats", help="print the funnel of a finished run")
    st.add_argument("output", help="a run's output directory")
    st.set_defaults(fn=cmd_stats)
    rp = sub.add_parser("report", help="write a run's report.html: funnel, reasons with samples, scores, mixes, "
                                       "shards, training curves")
    rp.add_argument("output", help="a run's output directory")
    rp.add_argument("--train", metavar="DIR", help="a training or DoReMi output directory to include "
                                                   "(default: the run's own train/ and doremi/)")
    rp.add_argument("--out", metavar="FILE", help="HTML file to write (default: OUTPUT/report.html)")
    rp.set_defaults(fn=cmd_report)
    tc = sub.add_parser("train-classifier", help="train a fastText classifier; write .ftz + JSON card with held-out metrics")
    tc.add_argument("config", nargs="?", help="training YAML (keys of datacurate.classify.TrainConfig)")
    tc.add_argument("--positive", nargs="+", metavar="PATH", help="positive examples: JSONL / Parquet files, dirs, globs")
    tc.add_argument("--negative", nargs="+", metavar="PATH", help="negative examples")
    tc.add_argument("--data", nargs="+", metavar="PATH", help="examples with a label field (see label_field)")
    tc.add_argument("--train-only", nargs="+", metavar="PATH", dest="train_only",
                    help="more labelled examples (label field) kept on the training side, never held out")
    tc.add_argument("--output", help="model path (.ftz); the card is written next to it (.json)")
    _set_option(tc, "override a parameter, e.g. fasttext.epoch=10, holdout_frac=0.1, positive_label=hq")
    tc.set_defaults(fn=cmd_train_classifier)
    tt = sub.add_parser("train-tokenizer", help="train a byte-level BPE tokenizer on a run's kept text (or any input)")
    tt.add_argument("inputs", nargs="+", metavar="RUN_DIR_OR_FILES",
                    help="a run directory (its kept/ is read) or JSONL / Parquet files, directories, globs")
    tt.add_argument("--vocab-size", type=int, default=8192, help="vocabulary size, special tokens included")
    tt.add_argument("--min-frequency", type=int, default=2, help="merges need at least this many occurrences")
    tt.add_argument("--bos", action="store_true", help="also add a <|bos|> token (EOS <|endoftext|> always)")
    tt.add_argument("--alpha", type=float, default=None, help="balance the training text over languages by "
                    "temperature sampling (each gets (bytes share)^alpha; XLM: 0.5, XLM-R / mT5 data: 0.3); "
                    "reads Parquet with the --by column, e.g. a run's kept/")
    tt.add_argument("--by", default="lang", help="with --alpha: the column whose values are balanced")
    tt.add_argument("--out", required=True, help="tokenizer.json to write")
    tt.set_defaults(fn=cmd_train_tokenizer)
    de = sub.add_parser("dedup-eval", help="precision / recall of near dedup on known duplicate pairs")
    de.add_argument("--generate", type=int, metavar="N", help="build N docs with planted near copies from --source")
    de.add_argument("--source", default="sample_data/corpus", help="JSONL texts to cut originals from (with --generate)")
    de.add_argument("--seed", type=int, default=0)
    de.add_argument("--docs", help="documents (JSONL or Parquet with id, text)")
    de.add_argument("--pairs", help="known pairs (JSONL or Parquet with id_a, id_b, jaccard)")
    de.add_argument("--threshold", type=float, default=0.8, help="Jaccard threshold of the dedup stage")
    de.add_argument("--positive-jaccard", type=float, default=0.85, help="pairs at or above count as duplicates")
    _set_option(de, "override a parameter of the dedup stage, e.g. 0.num_perm=256")
    de.add_argument("--output", required=True)
    de.set_defaults(fn=cmd_dedup_eval)
    _model_command(sub, "train", cmd_train, "train a GPT on token shards (dataset-decomposition curriculum, RHO-1)",
                   "training YAML (keys below)", "output directory: metrics.jsonl, final.json, checkpoints/",
                   "override a key, e.g. model.preset=124m, steps=1000, data.curriculum=uniform, rho1.ratio=0.6",
                   TrainConfig)
    _model_command(sub, "doremi", cmd_doremi, "DoReMi domain weights: reference + Group-DRO proxy -> domain_weights.json",
                   "YAML with the train keys plus a doremi: section",
                   "output directory: domain_weights.json, weights.jsonl, reference/, proxy/",
                   "e.g. doremi.proxy_steps=500, doremi.eta=1, doremi.reference_weights=w.json, model.preset=124m",
                   DoremiRunConfig)
    ab = sub.add_parser("ablate", help="compare data recipes at a fixed training budget: curate each arm, train "
                                       "it per seed, evaluate, report mean and CI per arm and the paired difference")
    ab.add_argument("ablation", help="ablation YAML (input, output, arms, baseline, budget, eval)")
    ab.add_argument("--output", help="output directory (overrides the YAML)")
    _set_option(ab, "override a key, e.g. budget.tokens=200000, budget.seeds=5, arms.b.train.data.curriculum=uniform")
    ab.add_argument("--resume", action="store_true", help="continue an interrupted ablation in OUT: finished arms "
                                                          "and seeds are not redone")
    ab.add_argument("--no-report", action="store_true", help="do not write OUT/report.html")
    ab.set_defaults(fn=cmd_ablate)
    ev = sub.add_parser("eval", help="per-domain loss of a checkpoint on every sequence of a shard set")
    ev.add_argument("checkpoint", help="checkpoint dir, RUN/checkpoints/latest or a training output dir")
    ev.add_argument("--shards", required=True)
    ev.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ev.add_argument("--output", help="JSON to write (default: CHECKPOINT/eval.json)")
    ev.set_defaults(fn=cmd_eval)
    ex = sub.add_parser("export", help="a checkpoint as a Hugging Face model directory (GPT-2 architecture, "
                                       "safetensors, tokenizer)")
    ex.add_argument("checkpoint", help="checkpoint dir, RUN/checkpoints/latest, a training or DoReMi reference/proxy dir")
    ex.add_argument("--output", required=True, help="directory to write (created; refused if not empty)")
    ex.add_argument("--format", default="hf", help="hf (the only one)")
    ex.add_argument("--tokenizer", help="tokenizer.json (default: the one in the checkpoint's shard directory)")
    ex.add_argument("--overwrite", action="store_true", help="replace a non-empty --output")
    ex.set_defaults(fn=cmd_export)
    sc = sub.add_parser("score-tokens", help="RHO-1: write reference per-token losses beside the shards")
    sc.add_argument("checkpoint", help="the reference checkpoint")
    sc.add_argument("--shards", required=True)
    sc.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    sc.set_defaults(fn=cmd_score_tokens)
    for parser in (p, *sub.choices.values()):  # before or after the command
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                            help="on an error, print the full traceback (else it goes to a log file the error names)")
    p.set_defaults(debug=False)
    return p


RESUMABLE = ("run", "train", "doremi", "ablate")  # what an interrupted command's --resume continues
# the options naming where the other commands write (run, train, doremi and ablate check their configs)
WRITES = {"calibrate": ("out",), "export": ("output",), "eval": ("output",), "train-classifier": ("output",), "train-tokenizer": ("out",),
          "dedup-eval": ("output",), "report": ("output", "out"), "score-tokens": ("shards",)}


def main(argv: list[str] | None = None) -> int:
    import faulthandler
    import signal

    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` prints every thread's stack (a run that seems stuck)
        try:
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        except (ValueError, OSError, AttributeError):  # stderr without a file descriptor (captured)
            pass
    args = build_parser().parse_args(argv)
    previous = _catch_interrupts()
    try:
        address = _cluster_address(args)
        if address:  # joined to a cluster: a parent process reports its loss (engine/ray/supervise.py)
            return supervise(sys.argv[1:] if argv is None else list(argv), address)
        refuse_relative_in_job({f"--{k}" if k != "output" or args.command != "report" else "OUT": getattr(args, k)
                                for k in WRITES.get(args.command, ()) if getattr(args, k, None)})
        return args.fn(args)
    except KeyboardInterrupt as e:  # SIGINT / SIGTERM: what was done is journaled or checkpointed
        return _interrupted(as_interrupted(e), args)  # Ray's waits raise a plain KeyboardInterrupt
    except RunStopped as e:  # a run that had started: journaled, --resume continues it
        _say(str(e), args.debug)
        return e.exit_code
    except _users_to_fix() as e:
        _say(str(e), args.debug, log=False)  # the user's to fix: the line says what
        return 2
    except Exception as e:  # noqa: BLE001 - operational errors in one line; a bug keeps its traceback
        found = explain(e)
        if found is None:
            raise
        if args.command in ("train", "doremi", "ablate"):  # checkpointed: --resume continues
            _say(str(stopped(e, args.command)), args.debug)
            return RunStopped.exit_code
        _say(found[0], args.debug)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _users_to_fix() -> tuple[type, ...]:
    """The errors a command reports as one line with exit code 2: the training ones only
    when their modules were imported (they import torch, ~2.7 CPU-seconds that ``run``,
    ``stages`` and ``report`` never need; an error of a module never imported was not raised)."""
    found = [ConfigError, InputError, FileNotFoundError, StorageError]
    for module, name in (("datacurate.train.checkpoint", "CheckpointError"), ("datacurate.train.data", "ShardError")):
        if module in sys.modules:
            found.append(getattr(sys.modules[module], name))
    return tuple(found)


def _catch_interrupts() -> dict:
    """SIGINT and SIGTERM raise :class:`Interrupted` naming the work in progress (the
    ``finally`` blocks on its way out shut the private Ray down); a second one during that
    clean-up is ignored. A signal the process was started ignoring (``nohup``, a
    background job's SIGINT) stays ignored. The handlers replaced, to put back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def interrupt(signum, frame):
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum, now_doing())

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler is not signal.SIG_IGN:
            previous[sig] = handler
            signal.signal(sig, interrupt)
    return previous


def _interrupted(e: Interrupted, args) -> int:
    """The one line for an interrupt (with ``--debug`` after its traceback); 128 + the signal."""
    import traceback

    if args.debug:
        print(traceback.format_exc(), file=sys.stderr, end="")
    todo = "run again with --resume to continue" if args.command in RESUMABLE else "run it again"
    print(f"datacurate: interrupted{' during ' + e.during if e.during else ''}; {todo}", file=sys.stderr, flush=True)
    return e.exit_code


def _cluster_address(args) -> str | None:
    """The Ray cluster this command will join: ``--ray-address``, ``$RAY_ADDRESS``, or a
    pipeline's ``ray.address`` (YAML or ``--set``); None for an embedded Ray or none."""
    if not may_join(args.command):
        return None
    address = getattr(args, "ray_address", None) or os.environ.get("RAY_ADDRESS")
    if address or args.command != "run":
        return address or None
    return load_config(args.pipeline, args.set, input_path=args.input, output_path=args.output).ray.address


def _say(line: str, debug: bool, log: bool = True) -> None:
    """The one line for an error being handled; its traceback on stderr with ``--debug``,
    else (``log``) in a log file the line names."""
    import tempfile
    import time
    import traceback

    text, where = traceback.format_exc(), ""
    if debug:
        print(text, file=sys.stderr, end="")
    elif log:
        path = os.path.join(tempfile.gettempdir(), f"datacurate-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")
        try:
            with open(path, "w") as f:
                f.write(text)
            where = f" (traceback: {path})"
        except OSError:
            where = " (traceback: run again with --debug)"
    print(f"datacurate: error: {line}{where}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
