"""datacurate: data curation for LLM pretraining on Ray."""

__version__ = "0.1.0"

_LAZY = {
    "Pipeline": "datacurate.pipeline",
    "LangId": "datacurate.stages.langid",
    "Heuristics": "datacurate.stages.heuristics",
    "Quality": "datacurate.stages.quality",
    "Toxicity": "datacurate.stages.toxicity",
    "Pii": "datacurate.stages.pii",
    "UrlFilter": "datacurate.stages.url_filter",
    "ExactDedup": "datacurate.stages.dedup_exact",
    "NearDedup": "datacurate.stages.dedup_near",
    "Dsir": "datacurate.stages.dsir",
    "Tokenize": "datacurate.stages.tokenize",
    "Decompose": "datacurate.stages.decompose",
    "load_config": "datacurate.config",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'datacurate' has no attribute {name!r}")


__all__ = list(_LAZY) + ["__version__"]
