"""datacurate: data curation for LLM pretraining on Ray."""

__version__ = "0.1.0"

_LAZY = {"Pipeline": "datacurate.pipeline", "load_config": "datacurate.configs.pipeline"}


def __getattr__(name: str):
    """``datacurate.Pipeline``, ``datacurate.load_config`` and every registered stage class
    (``datacurate.Dsir`` ...), imported on first use."""
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name[:1].isupper():  # not a submodule: ``from datacurate import storage`` asks here first
        stages = {cls.__name__: cls for cls in importlib.import_module("datacurate.registry").STAGES.values()}
        if name in stages:
            return stages[name]
    raise AttributeError(f"module 'datacurate' has no attribute {name!r}")
