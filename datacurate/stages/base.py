"""The shape every per-document stage shares.

A stage is configured by a dataclass (``Stage.Config``), built once per worker
(costly set-up such as loading a model happens in ``__init__``) and called on Arrow
batches: ``stage(table) -> table``. It returns the input rows, in order, with its
annotation columns (declared in ``Stage.columns``) and a ``reject_reason`` column
(null = keep). It never drops rows: the engine does the dropping, so accounting
lives in one place. Stages do not import Ray and run anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable, ClassVar, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import coerce
from datacurate.core.schema import ORD, REJECT_REASON


@dataclass(frozen=True)
class Score:
    """A score column the report draws as a histogram of kept and rejected rows, with a
    line at the stage's threshold (read from the resolved config) where one applies."""

    title: str
    key: str = ""  # dotted config key of the threshold ("" = none)
    reject: str = "below"  # the stage rejects documents "below" or "above" it
    applies: Callable[[Any], bool] = lambda config: True  # whether a threshold applies, so configured
    bounds: Optional[tuple[float, float]] = (0.0, 1.0)  # histogram range; None: the data's
    log_y: bool = False
    note: str = ""  # HTML after the histogram, str.format-ed with the stage's metrics (left out if one is missing)

    def threshold(self, config: Any) -> Optional[float]:
        return reduce(getattr, self.key.split("."), config) if self.key and self.applies(config) else None


class Stage:
    """The contract every stage declares on its class (defaults here); the engine, the
    report, the CLI and ``datacurate stages`` read it from there and name no stage."""

    name: ClassVar[str]
    Config: ClassVar[type]
    columns: ClassVar[dict[str, pa.DataType]] = {}
    scores: ClassVar[dict[str, Score]] = {}  # columns (of ``columns``) the report draws as score histograms
    # columns whose values the report counts (kept and rejected rows apart); (what, whose) headings draw
    # the mix before and after curation, None leaves the counts to the stage's own report section
    counted: ClassVar[dict[str, Optional[tuple[str, str]]]] = {}
    calibrated: ClassVar[Any] = None  # a classifier's Calibrated (stages/classifier_keys.py): top_fraction, buckets
    requires: ClassVar[tuple[str, ...]] = ()  # stages that must run earlier in the pipeline
    # config fields (dotted) naming side inputs, files besides the input that a cluster run copies
    # into the output's file system (engine/side.py); ``local_side_inputs``: those of them the
    # stage reads as local paths only (downloaded on each worker), the others it reads on s3:// itself
    side_inputs: ClassVar[tuple[str, ...]] = ()
    local_side_inputs: ClassVar[tuple[str, ...]] = ()
    is_global: ClassVar[bool] = False
    makes_tokens: ClassVar[bool] = False  # adds the token ids later stages (shards, exports) read
    uses_words: ClassVar[bool] = False  # cuts text into words (datacurate.text.words): its segmenters are checked at plan time
    writes_shards: ClassVar[bool] = False  # writes a shard set (a train: section reads it by default)
    output_key: ClassVar[Optional[str]] = None  # the config key naming a directory the stage writes (s3:// checked)
    default_outputs: ClassVar[tuple[str, ...]] = ()  # files / directories under OUT it owns, replaced by each run
    output_metrics: ClassVar[tuple[str, ...]] = ()  # metrics naming what it wrote (``datacurate run`` lists them)

    @classmethod
    def for_config(cls, config: Any) -> type:
        """The class the engine reads for this configuration: ``cls``, or a subclass whose
        ``columns`` carry names the configuration chose (``model_classifier``'s ``name``)."""
        return cls

    @classmethod
    def stats_key(cls, config: Any) -> str:
        """This stage's key in stats.json: its name, unless a stage that may appear twice
        in one pipeline (two exports) tells its instances apart."""
        return cls.name

    @classmethod
    def needs_columns(cls, config: Any) -> dict[str, str]:
        """Columns this stage, so configured, cannot run without ({column: the setting that
        asks for it}): every input file must be able to carry each, or an earlier stage add
        it, else the run stops at plan time with one line (:func:`datacurate.engine.process.check_columns`)."""
        return {}

    @classmethod
    def output_dir(cls, config: Any, out: str) -> Optional[str]:
        """The directory this stage, so configured, writes (``out``: OUT); None: none."""
        return None

    @classmethod
    def report_section(cls, view) -> str:
        """This stage's section of ``report.html`` ("": none). ``view``: a
        :class:`datacurate.report.sections.View` (stats.json entry, resolved config, data
        scan, drawing functions)."""
        return ""

    @classmethod
    def details(cls, config: Any) -> list[str]:
        """More lines ``datacurate stages NAME`` prints under the keys (a per-language table)."""
        return []

    @classmethod
    def rewrites_text(cls, config: Any) -> bool:
        """Whether this stage, so configured, changes ``text`` of the documents it keeps
        (then no stage that derives data from the text, such as tokenize, may precede it)."""
        return False

    def __init__(self, config: Any = None, **params: Any):
        if config is None:
            config = coerce(params, self.Config, self.name)
        elif params:
            raise TypeError(f"{self.name}: pass either a config or keyword parameters")
        self.config = config

    def annotate(self, table: pa.Table) -> tuple[dict[str, pa.Array], pa.Array | None]:
        """Return (annotation columns, reject reasons or None); implemented by stages."""
        raise NotImplementedError

    def metrics(self, table: pa.Table) -> dict:
        """This stage's metrics in stats.json, over its output rows (summed over batches:
        numbers add, dicts merge)."""
        return {}

    def __call__(self, table: pa.Table) -> pa.Table:
        if isinstance(table, dict):
            table = pa.table(table)
        return self.annotated(table, *self.annotate(table))

    @staticmethod
    def annotated(table: pa.Table, cols: dict, reasons) -> pa.Table:
        """``table`` with the annotation columns ``cols`` and the ``reasons`` (None: keep all) set."""
        for name, arr in cols.items():
            table = set_column(table, name, arr)
        return set_column(table, REJECT_REASON, pa.nulls(table.num_rows, pa.string()) if reasons is None else reasons)


def set_column(table: pa.Table, name: str, values) -> pa.Table:
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    i = table.schema.get_field_index(name)
    if i >= 0:
        return table.set_column(i, name, arr)
    return table.append_column(name, arr)


def first_reason(table_len: int, rules: list[tuple[str, np.ndarray]]) -> pa.Array:
    """Combine boolean failure masks into one reason per row: the first rule that fails.

    ``rules`` is an ordered list of (reason, mask); rows failing no rule get null.
    """
    out = np.full(table_len, None, dtype=object)
    undecided = np.ones(table_len, dtype=bool)
    for reason, mask in rules:
        hit = undecided & np.asarray(mask, dtype=bool)
        out[hit] = reason
        undecided &= ~hit
    return pa.array(out, pa.string())


def value_counts(values: pa.Array | pa.ChunkedArray, strip_detail: bool = False) -> dict:
    """{value: count} of the non-null values (for stats.json). ``strip_detail`` counts
    reasons by rule: ``near_dedup/dup_of:<id>`` -> ``near_dedup/dup_of`` (the detail follows the
    rule; a stage label may hold a colon too: ``exact_dedup:url/duplicate`` is kept whole)."""
    if len(values) == 0:
        return {}
    if strip_detail:
        values = pc.replace_substring_regex(values, r"^([^/]*/[^:]*):.*$", r"\1")
    vc = pc.value_counts(values)
    return {v["values"].as_py(): v["counts"].as_py() for v in vc if v["values"].is_valid}


class GlobalStage(Stage):
    """A stage whose decision needs the whole corpus (dedup, resampling).

    The stage declares its distributed phases in :meth:`run_global`, over the kept rows
    of the stages before it: plain functions of the stage's module, run by the engine's
    primitives (per-file tasks, groupbys, joins, sorts, actors), write a *decisions*
    table (``_ord``, ``reject_reason`` and the stage's annotation columns, one row per
    affected document) per part file; then every batch gets its decisions through
    :meth:`apply`. Adding a global stage is its module plus one line in the registry. Called
    directly on one table (``stage(table)``, :meth:`run_table`) a global stage runs the
    same :meth:`run_global` in this process, on that table alone.
    """

    is_global: ClassVar[bool] = True
    uses_accelerators: ClassVar[bool] = False  # phases want the cluster's GPUs (never the in-process small-input path there)

    def preflight(self, cfg, index: int) -> None:
        """Checks before any work starts (``cfg``: the pipeline, this stage is
        ``cfg.stages[index]``); raise a one-line ConfigError."""

    def run_global(self, ctx) -> dict:
        """All phases over the whole corpus through the engine's primitives (``ctx``: a
        :class:`datacurate.phases.context.Context`): write one decisions table per part
        file (``ctx.decisions_path``); return the stage's metrics for stats.json."""
        raise NotImplementedError

    def run_table(self, table: pa.Table, out: str | None = None) -> tuple[pa.Table, dict]:
        """:meth:`run_global` over ``table`` alone, in this process: the table annotated (as
        ``stage(table)``), and the metrics. ``out``: where the stage writes what a run
        writes under OUT (by default a temporary directory, dropped)."""
        from datacurate.phases.local import run_table  # the engine's in-process context runs the phases

        if isinstance(table, dict):
            table = pa.table(table)
        with_ord = table if ORD in table.column_names else table.append_column(
            ORD, pa.array(np.arange(table.num_rows, dtype=np.int64)))
        decisions, metrics = run_table(self, with_ord, out)
        return self.annotated(table, *self.apply(with_ord, decisions)), metrics

    def __call__(self, table: pa.Table) -> pa.Table:
        return self.run_table(table)[0]

    def apply(self, table: pa.Table, decisions: pa.Table) -> tuple[dict[str, pa.Array], pa.Array]:
        """Join ``decisions`` to ``table`` by ``_ord``: annotation columns and reasons."""
        pos = pc.index_in(table.column(ORD), value_set=decisions.column(ORD))
        cols = {}
        for name, typ in self.columns.items():
            col = decisions.column(name) if name in decisions.column_names else pa.nulls(decisions.num_rows, typ)
            cols[name] = pc.take(col, pos).cast(typ)
        return cols, pc.take(decisions.column(REJECT_REASON), pos).cast(pa.string())
