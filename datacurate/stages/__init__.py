"""Stage registry: the YAML name of every stage -> its class."""

from datacurate.stages.base import Stage
from datacurate.stages.heuristics import Heuristics, HeuristicsConfig
from datacurate.stages.langid import LangId, LangIdConfig

STAGES: dict[str, type[Stage]] = {cls.name: cls for cls in (LangId, Heuristics)}

__all__ = ["STAGES", "Stage", "LangId", "LangIdConfig", "Heuristics", "HeuristicsConfig"]
