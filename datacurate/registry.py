"""Stage registry: the YAML name of every stage -> its class.

A new stage is its module plus one entry here (or :func:`register` at run time: a
user's own stage, a test's). Everything else (engine, report, CLI) reads what the
stage class declares.
"""

from datacurate.stages.base import Stage
from datacurate.stages.score_rank import ScoreRank
from datacurate.stages.decompose import Decompose
from datacurate.stages.decontaminate import Decontaminate
from datacurate.stages.dedup_exact import ExactDedup
from datacurate.stages.dedup_near import NearDedup
from datacurate.stages.dsir import Dsir
from datacurate.stages.extract import Extract
from datacurate.stages.export_tokens import ExportTokens
from datacurate.stages.heuristics import Heuristics
from datacurate.stages.langid import LangId
from datacurate.stages.model_classifier import ModelClassifier
from datacurate.stages.pii import Pii
from datacurate.stages.quality import Quality
from datacurate.stages.tokenize import Tokenize
from datacurate.stages.toxicity import Toxicity
from datacurate.stages.url_filter import UrlFilter

STAGES: dict[str, type[Stage]] = {}


def register(cls: type[Stage]) -> type[Stage]:
    """Make ``cls`` usable in pipelines under ``cls.name`` (usable as a class decorator)."""
    STAGES[cls.name] = cls
    return cls


for _cls in (UrlFilter, Extract, LangId, Heuristics, Quality, Toxicity, Pii, Decontaminate, ExactDedup, NearDedup, Dsir,
             Tokenize, Decompose, ExportTokens, ModelClassifier, ScoreRank):
    register(_cls)
