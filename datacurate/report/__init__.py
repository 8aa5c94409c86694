"""The run report (``OUT/report.html``) and the ablation report: :mod:`.scan` reads what a
run left behind, :mod:`.svg` draws, :mod:`.sections` and :mod:`.ablation` compose the pages
(a stage supplies its own part: see :mod:`datacurate.report.sections`). Submodules load on
first use."""

_LAZY = {"write_report": "sections", "write_ablation_report": "ablation", "sample_rejects": "scan",
         "SAMPLES": "scan", "SAMPLE_CHARS": "scan"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f"datacurate.report.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'datacurate.report' has no attribute {name!r}")
