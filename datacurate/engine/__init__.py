"""Engine: plans reads, runs the stages on Ray, writes outputs and the stats report."""

from datacurate.engine.runner import run_pipeline

__all__ = ["run_pipeline"]
