"""datacurate: data curation for LLM pretraining on Ray."""

__version__ = "0.1.0"
