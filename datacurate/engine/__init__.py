"""Engine: plans reads, runs the stages on Ray, writes outputs and the stats report."""


def __getattr__(name: str):
    if name == "run_pipeline":  # ``from datacurate.engine import run_pipeline``, imported on first use
        from datacurate.engine.runner import run_pipeline

        return run_pipeline
    raise AttributeError(f"module 'datacurate.engine' has no attribute {name!r}")
