"""Stage registry: the YAML name of every stage -> its class."""

from datacurate.stages.base import GlobalStage, Stage
from datacurate.stages.decompose import Decompose, DecomposeConfig
from datacurate.stages.decontaminate import Decontaminate, DecontaminateConfig
from datacurate.stages.dedup_exact import ExactDedup, ExactDedupConfig
from datacurate.stages.dedup_near import NearDedup, NearDedupConfig
from datacurate.stages.dsir import Dsir, DsirConfig
from datacurate.stages.export_tokens import ExportTokens, ExportTokensConfig
from datacurate.stages.heuristics import Heuristics, HeuristicsConfig
from datacurate.stages.langid import LangId, LangIdConfig
from datacurate.stages.pii import Pii, PiiConfig
from datacurate.stages.quality import Quality, QualityConfig
from datacurate.stages.tokenize import Tokenize, TokenizeConfig
from datacurate.stages.toxicity import Toxicity, ToxicityConfig
from datacurate.stages.url_filter import UrlFilter, UrlFilterConfig

STAGES: dict[str, type[Stage]] = {cls.name: cls for cls in (UrlFilter, LangId, Heuristics, Quality, Toxicity, Pii,
                                                              Decontaminate,
                                                              ExactDedup, NearDedup, Dsir, Tokenize, Decompose,
                                                              ExportTokens)}

__all__ = ["STAGES", "Stage", "GlobalStage", "ExactDedup", "ExactDedupConfig", "NearDedup", "NearDedupConfig", "Dsir",
           "DsirConfig", "LangId", "LangIdConfig", "Heuristics", "HeuristicsConfig", "Quality", "QualityConfig",
           "Toxicity", "ToxicityConfig", "Tokenize", "TokenizeConfig", "Decompose", "DecomposeConfig", "Pii", "PiiConfig",
           "UrlFilter", "UrlFilterConfig", "Decontaminate", "DecontaminateConfig", "ExportTokens", "ExportTokensConfig"]
