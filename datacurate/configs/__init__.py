"""Typed configuration: the input section, the pipeline, training and ablation configs."""
