"""Stage registry: the YAML name of every stage -> its class."""

from datacurate.stages.base import GlobalStage, Stage
from datacurate.stages.dedup_exact import ExactDedup, ExactDedupConfig
from datacurate.stages.heuristics import Heuristics, HeuristicsConfig
from datacurate.stages.langid import LangId, LangIdConfig

STAGES: dict[str, type[Stage]] = {cls.name: cls for cls in (LangId, Heuristics, ExactDedup)}

__all__ = ["STAGES", "Stage", "GlobalStage", "ExactDedup", "ExactDedupConfig", "LangId", "LangIdConfig", "Heuristics", "HeuristicsConfig"]
